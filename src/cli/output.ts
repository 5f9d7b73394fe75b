import { escapeControlCharacters } from 'tessera-tokens/internal/text.js';

/** Text for a person: one line, or a list of lines. */
export type Lines = string | readonly string[];

/**
 * Prints a command's result: one JSON document with `--json`, text for a person otherwise. A control
 * character in a line of text (a newline or an escape sequence in a name stored before names were
 * checked, say) is printed escaped, never obeyed by the terminal.
 */
export class Output {
  constructor(
    readonly json: boolean,
    private readonly stdout: (text: string) => void = (text) => process.stdout.write(text),
    private readonly stderr: (text: string) => void = (text) => process.stderr.write(text),
  ) {}

  result(value: unknown, text: () => Lines): void {
    this.stdout(this.json ? `${JSON.stringify(value, null, 2)}\n` : `${printable(text())}\n`);
  }

  /** One item of a stream: a JSON object per line with `--json`. */
  line(value: unknown, text: () => string): void {
    this.stdout(`${this.json ? JSON.stringify(value) : printable(text())}\n`);
  }

  /** Data as it is, neither JSON nor lines for a person (an export of events): `--json` does not change it. */
  data(text: string): void {
    this.stdout(text);
  }

  /** Something the command goes on despite: on stderr, as a JSON object with `--json`. */
  warning(message: string): void {
    this.stderr(this.json ? `${JSON.stringify({ warning: message })}\n` : `tessera: warning: ${printable(message)}\n`);
  }

  /** On stderr: one JSON object with `--json` (`details` added to it), else each of `lines` then the message. */
  error(code: string, message: string, details: Readonly<Record<string, unknown>> = {}, lines: readonly string[] = []): void {
    if (this.json) {
      this.stderr(`${JSON.stringify({ errorCode: code, message, ...details })}\n`);
      return;
    }
    this.stderr([...lines, message].map((line) => `tessera: ${printable(line)}\n`).join(''));
  }
}

function printable(lines: Lines): string {
  return typeof lines === 'string' ? escapeControlCharacters(lines) : lines.map(escapeControlCharacters).join('\n');
}
