// Preloaded (`--require`) by tests of the launcher's fallback: a Node.js without process.execve
// (Windows), where `run` without heap limits runs as the launcher's child.
delete process.execve;
