// A contest test bot in C++ (nlohmann-json): answers hello with ready and every request with the
// first offered action.
#include <iostream>
#include <string>
#include <nlohmann/json.hpp>
using json = nlohmann::json;

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        json msg = json::parse(line);
        std::string type = msg.value("type", "");
        if (type == "hello") std::cout << json{{"type", "ready"}, {"name", "first-cpp"}}.dump() << std::endl;
        else if (type == "request") std::cout << json{{"type", "action"}, {"id", msg["id"]}, {"index", 0}}.dump() << std::endl;
        else if (type == "bye") break;
    }
    return 0;
}
