// Canonicalizes JSON with the npm `canonicalize` package (RFC 8785), an implementation nobody on
// this project wrote, so evident's and the Python verifier's JCS can be cross-checked against it.
//   node jcs.mjs FILE       -> JCS bytes of the JSON in FILE on stdout (no trailing newline)
//   node jcs.mjs --lines    -> stdin has one JSON text per line; stdout one JCS text per line
import { readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';

const args = process.argv.slice(2);
if (args.length === 1 && args[0] === '--lines') {
  const lines = readFileSync(0, 'utf8').split('\n').filter((l) => l.length > 0);
  process.stdout.write(lines.map((l) => canonicalize(JSON.parse(l)) + '\n').join(''));
} else if (args.length === 1) {
  process.stdout.write(canonicalize(JSON.parse(readFileSync(args[0], 'utf8'))));
} else {
  process.stderr.write('usage: node jcs.mjs FILE | node jcs.mjs --lines\n');
  process.exit(2);
}
