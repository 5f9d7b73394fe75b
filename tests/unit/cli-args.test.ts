import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCommand, UsageError } from '../../src/cli/args.js';

describe('parseCommand', () => {
  it("takes an argument of '-' and more characters as a value: a JWT key id may start with '-'", () => {
    const kid = '-3xQv_kP0Zt9bYgA1mW7cLrN2sHdE4fJ6uIoKpVaBcDe';
    const retire = parseCommand(['retire', '--jwt', kid, '--json'], { jwt: false });
    assert.deepEqual(retire.positionals, ['retire', kid]);
    assert.equal(retire.flags.jwt, true);
    assert.equal(retire.json, true);

    const named = parseCommand(['create', '--name', '-leading dash', '--scope', '-bc'], {
      name: true,
      scope: 'repeatable',
    });
    assert.equal(named.flags.name, '-leading dash');
    // '-a' is two characters: a short flag, which is not one of the command's.
    assert.throws(() => parseCommand(['--scope', '-a'], { scope: 'repeatable' }), UsageError);
    assert.deepEqual(parseCommand(['--scope', '-bc', '--scope', 'd'], { scope: 'repeatable' }).flags.scope, ['-bc', 'd']);
  });

  it('still refuses unknown flags, a valued flag given twice, and takes -h for help', () => {
    assert.throws(() => parseCommand(['--nope']), UsageError);
    assert.throws(() => parseCommand(['--name', 'a', '--name', 'b'], { name: true }), /--name is given more than once/);
    assert.equal(parseCommand(['-h']).help, true);
    assert.deepEqual(parseCommand(['--', '--literal']).positionals, ['--literal']);
  });
});
