// Starter bot for every tablebots game (protocol v1, see protocol.md), in C++17 with nlohmann-json.
//
// Build:  g++ -std=c++17 -O2 -o starter starter.cpp      (Debian/Ubuntu: apt-get install nlohmann-json3-dev)
// Run:    harness check-bot crisps ./starter
//
// It answers hello with ready and every request with a random offered action (by index).
// Write your strategy in choose(). Debug output goes to stderr, never to stdout.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

using json = nlohmann::json;

// Print one message as one line and flush it: an unflushed answer is a timeout.
static void send(const json& msg) { std::cout << msg.dump() << std::endl; }

// Your strategy: the seat's observation and the offered actions; return the index of one of them.
static std::size_t choose(const json& observation, const json& actions, std::mt19937& rng) {
    (void)observation;  // e.g. observation["hand"], see docs/rules/<game>.md
    std::uniform_int_distribution<std::size_t> pick(0, actions.size() - 1);
    return pick(rng);
}

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    std::mt19937 rng(argc > 2 && std::string(argv[1]) == "--seed" ? std::atoi(argv[2]) : std::random_device{}());
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        const json msg = json::parse(line);
        const std::string type = msg.value("type", "");
        if (type == "hello") {
            std::cerr << "playing " << msg.value("game", "?") << " in seat " << msg.value("seat", 0) << "\n";
            send({{"type", "ready"}, {"name", "cpp-starter"}});
        } else if (type == "request") {
            const json& actions = msg["actions"];
            const std::size_t index = choose(msg.value("observation", json::object()), actions, rng);
            std::cerr << "request " << msg["id"] << ": " << actions[index].dump() << "\n";
            send({{"type", "action"}, {"id", msg["id"]}, {"index", index}});
        } else if (type == "bye") {
            break;
        }  // start and result need no answer
    }
    return 0;
}
