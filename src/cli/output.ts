/** Prints a command's result: one JSON document with `--json`, text for a person otherwise. */
export class Output {
  constructor(
    readonly json: boolean,
    private readonly stdout: (text: string) => void = (text) => process.stdout.write(text),
    private readonly stderr: (text: string) => void = (text) => process.stderr.write(text),
  ) {}

  result(value: unknown, text: () => string): void {
    this.stdout(this.json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
  }

  /** One item of a stream: a JSON object per line with `--json`. */
  line(value: unknown, text: () => string): void {
    this.stdout(`${this.json ? JSON.stringify(value) : text()}\n`);
  }

  error(code: string, message: string): void {
    this.stderr(this.json ? `${JSON.stringify({ errorCode: code, message })}\n` : `tessera: ${message}\n`);
  }
}
