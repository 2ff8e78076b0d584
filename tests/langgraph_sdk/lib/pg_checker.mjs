// A private PostgreSQL for the many-hubs fault tests, and the checker that
// reads what the servers left in it (and in the sample's calendar, the
// external ledger the booking tool writes) to prove the promises of runs
// shared by several servers:
//
//   - every hub run ended (completed, failed, or paused: awaiting
//     clarification or approval), none is left running or owned, the run
//     queue is empty;
//   - each hub run's journal is contiguous (seq 1..journal_length);
//   - a tool call's record and an approval appear at most once in a journal
//     (no step or tool call was committed twice; a pause was answered once);
//   - each event feed ended, nothing but another end after its first end
//     (positions contiguous);
//   - fencing numbers never went back (a FenceWatcher samples them);
//   - the ledger holds each approved booking once, nothing else.
//
// The server comes from scripts/postgres-test-server.sh (initdb in /tmp,
// a free loopback port, stopped and removed at the end); SQL goes through
// the psql of the same installation (no client library of our own here).
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { repoRoot, scratchDir } from "./harness.mjs";

const serverScript = join(repoRoot, "scripts", "postgres-test-server.sh");
const started = new Set();
process.on("exit", () => {
  for (const dir of started) spawnSync("bash", [serverScript, "stop", dir], { stdio: "ignore" });
});
// Stopped from outside (a timeout, ^C): exit, so that the exit handlers stop
// the servers and remove the scratch directories.
for (const [signal, number] of [["SIGTERM", 15], ["SIGINT", 2], ["SIGHUP", 1]]) process.once(signal, () => process.exit(128 + number));

// Starts a private server; returns {url(database), tcpUrl(database, port),
// psql(sql, database), createDatabase(name), restart(downSeconds), stop()}.
export function startPostgres() {
  const dir = scratchDir("sb-pg-state-");
  const r = spawnSync("bash", [serverScript, "start", dir], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${serverScript} start failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  started.add(dir);
  const read = (name) => readFileSync(join(dir, name), "utf8").trim();
  const baseUrl = read("url");
  const psqlBin = join(read("bin_dir"), "psql");
  const url = (database = "switchboard_test") => baseUrl.replace("/switchboard_test?", `/${database}?`);
  const pg = {
    port: Number(read("port")),
    url,
    // The database over TCP as user swb, through `port` (a proxy's) or the server's own.
    tcpUrl(database, port = pg.port) {
      return `postgresql://swb@127.0.0.1:${port}/${database}`;
    },
    // Runs `sql` (one statement) and returns its rows as objects.
    psql(sql, database) {
      const out = execFileSync(
        psqlBin,
        ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(database), "-c", `SELECT COALESCE(json_agg(q), '[]') FROM (${sql}) q`],
        { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 },
      );
      return JSON.parse(out);
    },
    // Runs statements that return nothing to read (CREATE DATABASE cannot run in a SELECT).
    exec(sql, database = "postgres") {
      execFileSync(psqlBin, ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url(database), "-c", sql], { encoding: "utf8" });
    },
    createDatabase(name) {
      pg.exec(`CREATE DATABASE ${name}`);
      return url(name);
    },
    // Ends every session of `database` but psql's own (pg_terminate_backend);
    // returns how many were ended.
    terminateSessions(database) {
      const rows = pg.psql(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`,
        database,
      );
      return rows.filter((r) => r.ended).length;
    },
    // The server crashes (-m immediate: every session cut, no checkpoint),
    // stays down `downSeconds`, and starts again on the same port. The
    // caller's requests go on meanwhile (resolves when it accepts again).
    restart(downSeconds = 1) {
      return new Promise((resolve, reject) => {
        execFile("bash", [serverScript, "restart", dir, String(downSeconds)], (error, stdout, stderr) => {
          if (error) reject(new Error(`${serverScript} restart failed: ${error.message}\n${stdout}\n${stderr}`));
          else resolve();
        });
      });
    },
    stop() {
      spawnSync("bash", [serverScript, "stop", dir], { stdio: "ignore" });
      started.delete(dir);
    },
  };
  return pg;
}

// Samples every hub run's fencing number while a test runs, and remembers
// any that went back. stop() resolves once the last sample is taken.
export class FenceWatcher {
  constructor(pg, database, intervalMs = 200) {
    this.pg = pg;
    this.database = database;
    this.highest = new Map();
    this.wentBack = [];
    this.samples = 0;
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }
  sample() {
    let rows;
    try {
      rows = this.pg.psql("SELECT workflow_id, fence FROM switchboard_runs", this.database);
    } catch {
      return; // the tables may not exist yet
    }
    this.samples += 1;
    for (const { workflow_id: id, fence } of rows) {
      const before = this.highest.get(id) ?? 0;
      if (fence < before) this.wentBack.push({ workflow_id: id, before, after: fence });
      else this.highest.set(id, fence);
    }
  }
  stop() {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = null;
    this.sample();
  }
}

// The sample's calendar (SWITCHBOARD_STATE_DIR/scheduling/calendar.db):
// the entries and keyed operations the booking tool wrote. Read with
// python3's sqlite3 module (python3 is already needed by the PostgreSQL script).
export function readLedger(stateDir) {
  const db = join(stateDir, "scheduling", "calendar.db");
  const script = [
    "import json, sqlite3, sys",
    "c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)",
    "e = [dict(owner=r[0], start=r[1], origin=r[2]) for r in c.execute(\"SELECT owner, start, origin FROM entries WHERE origin <> 'seed'\")]",
    "o = [dict(run_id=r[0], item=r[1]) for r in c.execute('SELECT run_id, item FROM operations')]",
    "print(json.dumps(dict(entries=e, operations=o)))",
  ].join("\n");
  return JSON.parse(execFileSync("python3", ["-c", script, db], { encoding: "utf8" }));
}

// How a hub run may end: completed, failed, or paused for a person.
const endStatuses = ["completed", "failed", "awaiting_clarification", "awaiting_approval"];

// What the servers left in `database`: a list of problems (empty when every
// promise held) and counts for the report.
export function checkStore(pg, database) {
  const problems = [];
  const q = (sql) => pg.psql(sql, database);

  const runs = q("SELECT workflow_id, status, owner, fence, journal_length FROM switchboard_runs");
  for (const r of runs) {
    if (!endStatuses.includes(r.status)) problems.push(`hub run ${r.workflow_id} ended as ${r.status}`);
    if (r.owner !== "") problems.push(`hub run ${r.workflow_id} (${r.status}) is still owned by ${r.owner}`);
  }
  for (const row of q("SELECT workflow_id, owner FROM switchboard_queue"))
    problems.push(`thread ${row.workflow_id} is still in the run queue (owner '${row.owner}')`);

  const gaps = q(
    "SELECT r.workflow_id, r.journal_length, count(j.seq) AS n, min(j.seq) AS lo, max(j.seq) AS hi" +
      " FROM switchboard_runs r LEFT JOIN switchboard_journal j USING (workflow_id) GROUP BY 1, 2" +
      " HAVING count(j.seq) <> r.journal_length OR min(j.seq) <> 1 OR max(j.seq) <> r.journal_length",
  );
  for (const g of gaps) problems.push(`hub run ${g.workflow_id}: journal not contiguous: ${JSON.stringify(g)}`);

  // A tool call's record (result, approval, ...) committed twice means a
  // step or a call was executed (or an approval accepted) twice.
  const twice = q(
    "SELECT workflow_id, t->>'kind' AS kind, t->>'id' AS id, t->>'round' AS round, t->>'step' AS step, count(*) AS n" +
      " FROM switchboard_journal, jsonb_array_elements(record::jsonb->'tool_records') t" +
      " WHERE record::jsonb ? 'tool_records' GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1",
  );
  for (const t of twice) problems.push(`hub run ${t.workflow_id}: tool record committed ${t.n} times: ${JSON.stringify(t)}`);
  const outputsTwice = q(
    "SELECT workflow_id, o->>'agent' AS agent, count(*) AS n, string_agg(seq::text, ',') AS seqs" +
      " FROM switchboard_journal, jsonb_array_elements(record::jsonb->'outputs') o" +
      " WHERE record::jsonb ? 'outputs' GROUP BY 1, 2 HAVING count(*) > 1",
  );
  // (an agent may legitimately run twice in one run: the parser after a
  // clarification; the caller decides with the counts it returns)
  const approvals = q(
    "SELECT workflow_id, count(*) AS n FROM switchboard_journal, jsonb_array_elements(record::jsonb->'tool_records') t" +
      " WHERE record::jsonb ? 'tool_records' AND t->>'kind' = 'approval' GROUP BY 1",
  );

  // Each API run's feed: positions 1..n; it ended, and nothing but another
  // end follows its first end (a reader stops there: an event after it would
  // be lost; a second end, from a server that ended the stream of a run it
  // had lost meanwhile, is not).
  const end = "event LIKE '\\_\\_end\\_\\_%'";
  const feeds = q(
    "SELECT workflow_id, count(*) AS n, min(position) AS lo, max(position) AS hi," +
      ` count(*) FILTER (WHERE ${end}) AS ends, min(position) FILTER (WHERE ${end}) AS first_end,` +
      ` max(position) FILTER (WHERE NOT ${end}) AS last_event FROM switchboard_events` +
      " WHERE workflow_id <> 'switchboard.serve.catalog' GROUP BY 1",
  );
  for (const f of feeds) {
    if (f.lo !== 1 || f.hi !== f.n) problems.push(`feed ${f.workflow_id}: positions not contiguous: ${JSON.stringify(f)}`);
    if (f.ends === 0) problems.push(`feed ${f.workflow_id} ended 0 times`);
    else if (f.last_event > f.first_end) problems.push(`feed ${f.workflow_id}: events after its end: ${JSON.stringify(f)}`);
  }
  const byStatus = {};
  for (const r of runs) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
  return { problems, runs, byStatus, feeds: feeds.length, outputsTwice, approvals };
}

// The ledger against the bookings the test approved: each approved hub run
// booked once (one keyed operation, one entry per owner), nothing else booked.
export function checkLedger(stateDir, approvedHubRuns) {
  const problems = [];
  const { entries, operations } = readLedger(stateDir);
  const opsByRun = new Map();
  for (const o of operations) {
    const hubRun = o.run_id.split("/")[0];
    opsByRun.set(hubRun, (opsByRun.get(hubRun) ?? 0) + 1);
  }
  for (const id of approvedHubRuns) {
    if ((opsByRun.get(id) ?? 0) !== 1) problems.push(`approved hub run ${id}: ${opsByRun.get(id) ?? 0} bookings in the ledger`);
  }
  for (const [id, n] of opsByRun) if (!approvedHubRuns.has(id)) problems.push(`hub run ${id} booked ${n} times without an approval`);
  const seen = new Map();
  for (const e of entries) {
    const key = `${e.origin}|${e.owner}|${e.start}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  for (const [key, n] of seen) if (n > 1) problems.push(`ledger entry ${key} written ${n} times`);
  return { problems, operations: operations.length, entries: entries.length };
}
