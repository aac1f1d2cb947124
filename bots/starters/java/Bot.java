// Starter bot for every tablebots game (protocol v1, see protocol.md), in Java 17 with only the JDK.
//
// Build:  javac Bot.java
// Run:    harness check-bot crisps "java -cp . Bot"      (in this directory)
//
// It answers hello with ready and every request with a random offered action (by index).
// Write your strategy in `choose`. Debug output goes to System.err, never to System.out.
// The JDK has no JSON, so a small reader and writer is below (Json.parse, Json.dump).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

public class Bot {
    /** A JSON value: null, Boolean, Double, String, List<Object> or Map<String, Object> (keys in order). */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) { this.s = s; }

        static Object parse(String text) {
            Json p = new Json(text);
            Object v = p.value();
            p.ws();
            if (p.i != text.length()) throw new IllegalArgumentException("trailing text at " + p.i);
            return v;
        }

        private void ws() {
            while (i < s.length() && " \t\n\r".indexOf(s.charAt(i)) >= 0) i++;
        }

        private boolean eat(String word) {
            if (s.startsWith(word, i)) { i += word.length(); return true; }
            return false;
        }

        private Object value() {
            ws();
            if (i >= s.length()) throw new IllegalArgumentException("unexpected end");
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> members = new LinkedHashMap<>();
                ws();
                if (eat("}")) return members;
                while (true) {
                    ws();
                    Object key = value();
                    if (!(key instanceof String)) throw new IllegalArgumentException("object key expected at " + i);
                    ws();
                    if (!eat(":")) throw new IllegalArgumentException("':' expected at " + i);
                    members.put((String) key, value());
                    ws();
                    if (eat("}")) return members;
                    if (!eat(",")) throw new IllegalArgumentException("',' or '}' expected at " + i);
                }
            }
            if (c == '[') {
                i++;
                List<Object> items = new ArrayList<>();
                ws();
                if (eat("]")) return items;
                while (true) {
                    items.add(value());
                    ws();
                    if (eat("]")) return items;
                    if (!eat(",")) throw new IllegalArgumentException("',' or ']' expected at " + i);
                }
            }
            if (c == '"') return string();
            if (eat("true")) return Boolean.TRUE;
            if (eat("false")) return Boolean.FALSE;
            if (eat("null")) return null;
            int start = i;
            while (i < s.length() && "+-.eE0123456789".indexOf(s.charAt(i)) >= 0) i++;
            try {
                return Double.parseDouble(s.substring(start, i));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("unexpected text at " + start);
            }
        }

        private String string() {
            i++; // the opening quote
            StringBuilder out = new StringBuilder();
            while (i < s.length()) {
                char c = s.charAt(i++);
                if (c == '"') return out.toString();
                if (c != '\\') { out.append(c); continue; }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': out.append('\n'); break;
                    case 't': out.append('\t'); break;
                    case 'r': out.append('\r'); break;
                    case 'b': out.append('\b'); break;
                    case 'f': out.append('\f'); break;
                    case 'u': out.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    default: out.append(e); // \" \\ \/
                }
            }
            throw new IllegalArgumentException("unterminated string");
        }

        /** Compact JSON text of a value. */
        @SuppressWarnings("unchecked")
        static String dump(Object v) {
            if (v == null) return "null";
            if (v instanceof Boolean) return v.toString();
            if (v instanceof Double) {
                double d = (Double) v;
                return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
            }
            if (v instanceof String) return quote((String) v);
            StringBuilder out = new StringBuilder();
            if (v instanceof List) {
                out.append('[');
                for (Object item : (List<Object>) v) { if (out.length() > 1) out.append(','); out.append(dump(item)); }
                return out.append(']').toString();
            }
            out.append('{');
            for (Map.Entry<String, Object> m : ((Map<String, Object>) v).entrySet()) {
                if (out.length() > 1) out.append(',');
                out.append(quote(m.getKey())).append(':').append(dump(m.getValue()));
            }
            return out.append('}').toString();
        }

        static String quote(String text) {
            StringBuilder out = new StringBuilder("\"");
            for (char c : text.toCharArray()) {
                if (c == '"') out.append("\\\"");
                else if (c == '\\') out.append("\\\\");
                else if (c == '\n') out.append("\\n");
                else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                else out.append(c);
            }
            return out.append('"').toString();
        }
    }

    /** Your strategy: the index of the action to play among the offered ones. */
    static int choose(Object observation, List<Object> actions, Random rng) {
        return rng.nextInt(actions.size());
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        long seed = System.nanoTime();
        for (int a = 0; a + 1 < args.length; a++) if (args[a].equals("--seed")) seed = Long.parseLong(args[a + 1]);
        Random rng = new Random(seed);
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            Map<String, Object> msg = (Map<String, Object>) Json.parse(line);
            String type = (String) msg.get("type");
            if ("hello".equals(type)) {
                System.err.println("playing " + msg.get("game") + " in seat " + Json.dump(msg.get("seat")));
                out.println("{\"type\":\"ready\",\"name\":\"java-starter\"}");
                out.flush(); // an answer left in the buffer is a timeout
            } else if ("request".equals(type)) {
                List<Object> actions = (List<Object>) msg.get("actions");
                int index = choose(msg.get("observation"), actions, rng);
                System.err.println("request " + Json.dump(msg.get("id")) + ": " + Json.dump(actions.get(index)));
                out.println("{\"type\":\"action\",\"id\":" + Json.dump(msg.get("id")) + ",\"index\":" + index + "}");
                out.flush();
            } else if ("bye".equals(type)) {
                break;
            } // start and result need no answer
        }
    }
}
