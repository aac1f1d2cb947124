// Starter bot for every tablebots game (protocol v1, see protocol.md), in Go with only the standard library.
//
// Build:  go build -o bot bot.go
// Run:    harness check-bot crisps ./bot
//
// It answers hello with ready and every request with a random offered action (by index).
// Write your strategy in choose. Debug output goes to stderr (log.Printf), never to stdout.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"time"
)

// message is every field the referee's messages use here; the rest stay raw.
type message struct {
	Type        string            `json:"type"`
	Game        string            `json:"game"`
	Seat        int               `json:"seat"`
	ID          json.RawMessage   `json:"id"`
	Observation json.RawMessage   `json:"observation"`
	Actions     []json.RawMessage `json:"actions"`
}

// choose is your strategy: the index of the action to play among the offered ones.
func choose(observation json.RawMessage, actions []json.RawMessage, rng *rand.Rand) int {
	return rng.Intn(len(actions))
}

func main() {
	seed := flag.Int64("seed", time.Now().UnixNano(), "random seed")
	flag.Parse()
	rng := rand.New(rand.NewSource(*seed))
	log.SetFlags(0)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24) // requests can be long lines
	out := bufio.NewWriter(os.Stdout)
	send := func(line string) {
		fmt.Fprintln(out, line)
		out.Flush() // an answer left in the buffer is a timeout
	}
	for in.Scan() {
		if len(in.Bytes()) == 0 {
			continue
		}
		var msg message
		if err := json.Unmarshal(in.Bytes(), &msg); err != nil {
			log.Fatalf("unreadable line from the referee: %v", err)
		}
		switch msg.Type {
		case "hello":
			log.Printf("playing %s in seat %d", msg.Game, msg.Seat)
			send(`{"type":"ready","name":"go-starter"}`)
		case "request":
			index := choose(msg.Observation, msg.Actions, rng)
			log.Printf("request %s: %s", msg.ID, msg.Actions[index])
			send(fmt.Sprintf(`{"type":"action","id":%s,"index":%d}`, msg.ID, index))
		case "bye":
			return
		} // start and result need no answer
	}
}
