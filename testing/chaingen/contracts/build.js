// Compiles src/*.sol through solc's standard-JSON interface; called by build.sh.
'use strict';
const fs = require('fs');
const path = require('path');
const solc = require('solc');

const srcDir = path.join(__dirname, 'src');
const outDir = path.join(__dirname, 'out');
const sources = {};
for (const file of fs.readdirSync(srcDir).filter((f) => f.endsWith('.sol')).sort()) {
  sources[file] = { content: fs.readFileSync(path.join(srcDir, file), 'utf8') };
}
const input = {
  language: 'Solidity',
  sources,
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: 'cancun',
    // No CBOR metadata trailer: comments and paths must not change the bytecode.
    metadata: { appendCBOR: false, bytecodeHash: 'none' },
    outputSelection: { '*': { '*': ['evm.bytecode.object', 'evm.deployedBytecode.object'] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === 'error');
for (const e of output.errors || []) console.error(e.formattedMessage);
if (errors.length > 0) process.exit(1);

fs.mkdirSync(outDir, { recursive: true });
for (const file of Object.keys(output.contracts).sort()) {
  for (const name of Object.keys(output.contracts[file]).sort()) {
    // Interfaces have no code.
    const evm = output.contracts[file][name].evm;
    if (!evm.bytecode.object) continue;
    fs.writeFileSync(path.join(outDir, `${name}.bin`), evm.bytecode.object + '\n');
    fs.writeFileSync(path.join(outDir, `${name}.bin-runtime`), evm.deployedBytecode.object + '\n');
    console.log(`${name}: ${evm.bytecode.object.length / 2} bytes creation, ${evm.deployedBytecode.object.length / 2} bytes runtime`);
  }
}
console.log(`solc ${solc.version()}`);
