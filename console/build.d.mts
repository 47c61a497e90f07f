/** The console's build (console/build.mjs). */
export interface ConsoleFile {
  readonly contentType: string
  readonly text: string
}
export interface ConsoleBuild {
  readonly files: Readonly<Record<string, ConsoleFile>>
  /** The entry script's file name. */
  readonly script: string
  /** The entry's stylesheet's file name. */
  readonly style: string | undefined
}
export declare function buildConsole(): Promise<ConsoleBuild>
