#!/usr/bin/env node
// Starter bot for every tablebots game (protocol v1, see protocol.md), in JavaScript for node >= 18.
//
// Run:  harness check-bot crisps "node starter.js"       (no build step, no packages)
//
// It answers hello with ready and every request with a random offered action (by index).
// Write your strategy in choose(). Debug output goes to stderr (console.error), never to stdout.
'use strict';

const readline = require('readline');

// One message, one line. On Linux node writes to a pipe synchronously, so the line has left
// when write returns (no flush needed; console.log would do the same).
function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }

// Your strategy: the seat's observation and the offered actions; return the index of one of them.
function choose(observation, actions) {
  // e.g. observation.hand, see docs/rules/<game>.md
  return Math.floor(Math.random() * actions.length);
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
rl.on('line', (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.type === 'hello') {
    console.error(`playing ${msg.game} in seat ${msg.seat}`);
    send({ type: 'ready', name: 'js-starter' });
  } else if (msg.type === 'request') {
    const index = choose(msg.observation || {}, msg.actions);
    console.error(`request ${msg.id}: ${JSON.stringify(msg.actions[index])}`);
    send({ type: 'action', id: msg.id, index });
  } else if (msg.type === 'bye') {
    rl.close();
  } // start and result need no answer
});
rl.on('close', () => process.exit(0));
