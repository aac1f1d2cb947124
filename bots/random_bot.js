#!/usr/bin/env node
// Reference random bot for every tablebots game (protocol v1), in JavaScript for node.
// Answers hello with ready and every request with a uniformly random offered action, by index.
// Exits on bye or end of input.
//
//     node bots/random_bot.js [--seed N] [--name NAME]
'use strict';

const readline = require('readline');

function parseArgs(argv) {
  const args = { seed: null, name: 'random-js' };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--seed') args.seed = Number(argv[++i]);
    else if (argv[i] === '--name') args.name = argv[++i];
    else { process.stderr.write(`unknown argument ${argv[i]}\n`); process.exit(2); }
  }
  return args;
}

// mulberry32: small seeded PRNG, so --seed makes the bot reproducible.
function makeRng(seed) {
  if (seed === null || Number.isNaN(seed)) return Math.random;
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const args = parseArgs(process.argv.slice(2));
const random = makeRng(args.seed);
// On Linux, node writes to a pipe synchronously: each line has left the process when write returns.
function send(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
rl.on('line', (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.type === 'hello') {
    send({ type: 'ready', name: args.name });
  } else if (msg.type === 'request') {
    send({ type: 'action', id: msg.id, index: Math.floor(random() * msg.actions.length) });
  } else if (msg.type === 'bye') {
    rl.close();
    process.exit(0);
  }
});
rl.on('close', () => process.exit(0));
