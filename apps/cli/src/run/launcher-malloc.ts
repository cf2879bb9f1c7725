/**
 * The launcher's malloc setting for `run` (bin/auditpipe.js, runMallocEnv): glibc read it when this
 * process started, so it has done its work; it is taken out of the environment `run` hands on to
 * the processes it starts (the compaction child, whose allocations differ). A value the user set
 * (without the launcher's AUDITPIPE_SET_MALLOC) is theirs and stays.
 */
export function dropLauncherMalloc(env: NodeJS.ProcessEnv): void {
  if (env.AUDITPIPE_SET_MALLOC !== "1") return;
  delete env.MALLOC_MMAP_THRESHOLD_;
  delete env.AUDITPIPE_SET_MALLOC;
}
