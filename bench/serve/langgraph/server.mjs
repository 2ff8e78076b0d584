// The LangGraph JS dev server (the in-memory server `langgraphjs dev`
// runs), started programmatically in this one process so its CPU and
// memory are one PID's: node server.mjs PORT [WORKERS]. Prints
// "listening on http://127.0.0.1:PORT" once it accepts connections.
// WORKERS is the dev server's --n-jobs-per-worker (default 10): how many
// runs execute at once.
import { startServer } from "@langchain/langgraph-api/server";
import { fileURLToPath } from "node:url";
import * as path from "node:path";

const port = Number.parseInt(process.argv[2] ?? "0", 10);
const nWorkers = Number.parseInt(process.argv[3] ?? "10", 10);
const cwd = path.dirname(fileURLToPath(import.meta.url));
const { host } = await startServer({
  port,
  nWorkers,
  host: "127.0.0.1",
  cwd,
  graphs: { bench_serve: "./graph.mjs:graph", bench_serve_park: "./graph.mjs:park" },
});
console.log(`listening on http://${host}`);
