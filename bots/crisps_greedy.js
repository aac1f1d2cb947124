#!/usr/bin/env node
// Greedy Crisps bot in JavaScript for node (protocol v1, no dependencies).
//
// Strategy, from the observation and the offered actions only:
// - a play that empties the hand is always made;
// - leading: shed the most cards at once (runs and runs of pairs first), lowest top card first,
//   keeping triples and quads for when they are the only way to beat a Queen;
// - following: the cheapest ordinary play that beats the table (lowest top card, fewest cards);
//   a triple or quad only when the opponent is close to going out; otherwise pass;
// - after a pass: take the face-up offer when it pairs with or extends the hand, else blind.
//
//     node bots/crisps_greedy.js [--name NAME]
'use strict';

const readline = require('readline');

const RANK = { Q: 11, J: 11 };
for (let r = 2; r <= 10; r++) RANK[String(r)] = r;
const SPECIAL = new Set(['triple', 'quad']);

function kindOf(cards) {
  const distinct = new Set(cards).size;
  if (distinct === 1) return ['single', 'pair', 'triple', 'quad'][cards.length - 1];
  return 'run';
}

const top = (a) => RANK[a.cards[a.cards.length - 1]];
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function choose(obs, actions) {
  if (actions[0].type === 'take') {
    const counts = new Array(12).fill(0);
    for (const c of obs.hand) counts[RANK[c]] += 1;
    let source = 'blind';
    if (obs.offer !== null && obs.offer !== undefined) {
      const r = RANK[obs.offer];
      if (counts[r] > 0 || (r > 2 && counts[r - 1] > 0) || (r < 11 && counts[r + 1] > 0)) source = 'offer';
    }
    return actions.find((a) => a.source === source) || actions[0];
  }
  const plays = actions.filter((a) => a.type === 'play');
  const out = plays.find((a) => a.cards.length === obs.hand.length);
  if (out) return out;
  const ordinary = plays.filter((a) => !SPECIAL.has(kindOf(a.cards)));
  const special = plays.filter((a) => SPECIAL.has(kindOf(a.cards)));
  const opponentCards = obs.hand_sizes[1 - obs.seat];
  if (obs.table === null) {
    const pool = ordinary.length ? ordinary : special;
    return pool.reduce((best, a) =>
      (a.cards.length > best.cards.length || (a.cards.length === best.cards.length && top(a) < top(best))) ? a : best);
  }
  const cheapest = (list) => list.reduce((best, a) =>
    (top(a) < top(best) || (top(a) === top(best) && a.cards.length < best.cards.length)) ? a : best);
  if (ordinary.length) return cheapest(ordinary);
  if (special.length && opponentCards <= 4) return cheapest(special);
  return actions.find((a) => same(a, { type: 'pass' })) || actions[0];
}

let name = 'crisps-greedy-js';
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--name') name = argv[++i];
  else { process.stderr.write(`unknown argument ${argv[i]}\n`); process.exit(2); }
}

// On Linux, node writes to a pipe synchronously: each line has left the process when write returns.
function send(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
rl.on('line', (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.type === 'hello') {
    send({ type: 'ready', name });
  } else if (msg.type === 'request') {
    send({ type: 'action', id: msg.id, action: choose(msg.observation, msg.actions) });
  } else if (msg.type === 'bye') {
    rl.close();
  }
});
rl.on('close', () => process.exit(0));
