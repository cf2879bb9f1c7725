/** What every command writes through: main.ts gives the process's streams, tests their own. */
export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether stderr is a terminal (progress bars only then). */
  stderrIsTTY: boolean;
}
