// Reads `npm outdated --all --omit=dev --json` on stdin and prints the production packages whose
// installed version is older than the newest release their dependents' ranges allow (a security fix
// usually arrives as such a release). Platform packages that are not installed are not counted.
import { readFileSync } from 'node:fs';

const text = readFileSync(0, 'utf8').trim();
let report;
try {
  report = text === '' ? {} : JSON.parse(text);
} catch {
  report = { error: { summary: 'not JSON' } };
}
if (report.error !== undefined) {
  console.log(`npm outdated: NOT CHECKED (${report.error.summary ?? report.error.code ?? 'failed'})`);
  process.exit(0);
}
const behind = [];
for (const [name, entries] of Object.entries(report)) {
  for (const entry of [entries].flat()) {
    if (entry.current !== undefined && entry.current !== entry.wanted)
      behind.push(`  ${name} ${entry.current}, ${entry.wanted} allowed (${entry.location})`);
  }
}
console.log(
  behind.length === 0
    ? 'npm outdated: every production package is at the newest release its range allows'
    : `npm outdated: production packages behind the newest release their range allows:\n${behind.join('\n')}`,
);
