// `store.*` operations (docs/protocol.md §4.2) over upstream's SQLite runtime store.
//
// What is called (all of it upstream's public storage API, `@maka/storage` = storage/dist/index.js):
//
// * the workspace store is the one the product opens: `createWorkspaceRuntimeStore(ws)`
//   (runtime-event-persistence.ts, = `openRuntimeEventPersistence`), i.e. `<ws>/runtime.sqlite`
//   under the operational-state owner (`acquireOperationalStateDatabase`). A read-only open is
//   `createSqliteRuntimeStore(<ws>/runtime.sqlite, {readOnly: true})`, exactly the store
//   `openRuntimeEventReadPersistence` wraps (that wrapper hides the projection reads the protocol
//   needs, so the store is opened the same way directly).
// * AgentRun headers go through `createSqliteAgentRunStore(ws)` (agent-run-store.ts), which shares
//   the operational owner (one connection) with the writer store.
// * writes: `importRuntimeEvent` (generic append), `commitToolPrepared` (T1),
//   `commitToolOutcome` (T2), `commitToolRecoveryBundle`; reads: `readImmutableRuntimeEvents`,
//   `readImmutableRuntimePrefix`, `readToolOperation`, `readToolJournal`,
//   `listUnsettledToolOperations`; `rebuildToolProjectionsFromRuntimeEvents`.
// * `store.project`'s resolution and plan are `resolveRuntimeRecovery` and
//   `buildResumePlanFromRuntimeEvents` (runtime package) of each run's immutable events; its
//   health is upstream's `scanToolLedger` over every immutable event in the order the store's
//   own health gate scans them.
//
// Where upstream has no API: it cannot *list* runs, sessions or tool operations, so
// `store.project` enumerates those keys (only the keys) with one read-only `node:sqlite`
// connection on upstream's file; every value it reports is read back through the API above. With
// no writer open, AgentRun headers are decoded from that read-only connection by upstream's own
// codec (`decodeAgentRunHeader`, storage/dist/execution-record-codec.js): the AgentRun store
// has no read-only open, and opening its writer would migrate/write on a read.
//
// Errors: upstream throws plain `Error`s with the spec's messages, or typed errors carrying a
// `.code` (`ToolLedgerRejectionError`, `ToolLedgerCorruptionError`,
// `ToolRecoveryBundleValidationError`, `OperationalStateMigrationBlockedError`, `ENOENT`).
// `translate` maps them onto docs/protocol-codes.md; the original message is kept.

import { existsSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { OpError, invalidParams } from "./errors.mjs";
import { importDist } from "./upstream.mjs";

export const STORE_OPERATIONS = [
  "store.open", "store.close", "store.create_run", "store.update_run", "store.append",
  "store.commit_tool_prepared", "store.commit_tool_outcome", "store.commit_recovery_bundle",
  "store.read_events", "store.project", "store.rebuild_projections",
  "store.claim_continuation", "store.commit_continuation_start",
];

// ---------------------------------------------------------------------------------------------
// params
// ---------------------------------------------------------------------------------------------

const hasOwn = (o, k) => o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k);
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function req(params, key) {
  if (!hasOwn(params, key)) throw invalidParams(`params.${key} is required`);
  return params[key];
}

function reqStr(params, key) {
  const value = req(params, key);
  if (typeof value !== "string" || value === "") throw invalidParams(`params.${key} must be a non-empty string`);
  return value;
}

function reqObject(params, key) {
  const value = req(params, key);
  if (!isObject(value)) throw invalidParams(`params.${key} must be an object`);
  return value;
}

function reqInt(params, key) {
  const value = req(params, key);
  if (!Number.isSafeInteger(value)) throw invalidParams(`params.${key} must be an integer`);
  return value;
}

function optStr(params, key) {
  return params[key] === undefined || params[key] === null ? undefined : reqStr(params, key);
}

function optBool(params, key, fallback) {
  if (!hasOwn(params, key)) return fallback;
  if (typeof params[key] !== "boolean") throw invalidParams(`params.${key} must be a boolean`);
  return params[key];
}

/** `params.workspace`: an absolute path the harness created (protocol §4.2). */
function workspaceOf(params) {
  const value = reqStr(params, "workspace");
  if (value.includes("\0")) throw invalidParams("params.workspace must be a file-system path (no NUL)");
  if (!path.isAbsolute(value)) throw invalidParams("params.workspace must be an absolute path");
  return value;
}

/**
 * `store.project` is this adapter's composition (upstream has no inspection entry point), so it
 * refuses a bad workspace argument with the codes of docs/protocol-codes.md §3 before reading.
 */
function checkWorkspaceDir(workspace) {
  let stat;
  try {
    stat = statSync(workspace);
  } catch (error) {
    if (error?.code === "ENOENT" || error?.code === "ENOTDIR") {
      throw new OpError("workspace_not_found", `workspace ${workspace} does not exist`);
    }
    throw new OpError("workspace_unreadable", `workspace ${workspace} cannot be read: ${error?.message ?? error}`);
  }
  if (!stat.isDirectory()) throw new OpError("workspace_not_a_directory", `workspace ${workspace} is not a directory`);
}

function keyOf(workspace) {
  try {
    return realpathSync(workspace);
  } catch {
    return path.resolve(workspace);
  }
}

// ---------------------------------------------------------------------------------------------
// upstream errors → protocol codes (docs/protocol-codes.md)
// ---------------------------------------------------------------------------------------------

/** Upstream's error messages (storage/src, core/src) and the code protocol-codes.md gives them. */
const MESSAGE_CODES = [
  // opening and schema (sqlite-runtime-schema.ts, sqlite-runtime-store.ts, operational-state-store.ts)
  [/is newer than supported version/, "schema_too_new"],
  [/cannot be read without upgrading/, "schema_not_current"],
  [/^Missing SQLite runtime migration/, "missing_migration"],
  [/^Invalid SQLite runtime schema version/, "invalid_schema_version"],
  [/has invalid version/, "invalid_schema_version"],
  [/requires WAL journal mode/, "wal_unavailable"],
  [/^SQLite runtime (recovery|continuation|workspace) capability .* is unavailable/, "capability_unavailable"],
  // codec (core canonical-runtime-event.ts, runtime-event.ts)
  [/^Invalid RuntimeEvent schema/, "invalid_runtime_event"],
  [/not losslessly serializable/, "runtime_event_not_serializable"],
  // reserved writers (runtime-event-authority.ts; sqlite-runtime-store.ts assertNoReserved*)
  [/^Workspace facts require the atomic workspace version authority writer/, "reserved_workspace_fact"],
  [/^RuntimeEvent targets the reserved workspace authority stream/, "reserved_workspace_stream"],
  [/^Continuation start facts require the continuation authority writer/, "reserved_continuation_start"],
  [/^Tool recovery facts require the atomic recovery bundle writer/, "reserved_recovery_fact"],
  [/^Durable tool facts require the atomic tool boundary writer/, "reserved_tool_boundary_fact"],
  [/violates its semantic lane$/, "semantic_lane_violation"],
  // identity (sqlite-runtime-store.ts insert primitive)
  [/^RuntimeEvent store identity does not match event/, "store_identity_mismatch"],
  [/^RuntimeEvent invocation identity conflict/, "invocation_identity_conflict"],
  [/^RuntimeEvent run identity conflict/, "run_identity_conflict"],
  [/^RuntimeEvent identity conflict for/, "event_identity_conflict"],
  [/^Invalid RuntimeEvent (id|sessionId|invocationId|runId|turnId)$/, "invalid_event_identity"],
  [/already exists outside this tool transaction/, "event_exists_outside_transaction"],
  [/^Immutable steering message identity conflict/, "steering_identity_conflict"],
  [/row\/payload identity mismatch/, "row_payload_identity_mismatch"],
  // T1 (assertPreparedInput, assertSameRuntimeIdentity, assertPreparedIdentity)
  [/^T1 journal identity must be derived/, "t1_journal_identity"],
  [/^T1 requires a function_call RuntimeEvent/, "t1_function_call_required"],
  [/^T1 RuntimeEvent identity does not match/, "t1_identity_mismatch"],
  [/^T1 argument hash does not match/, "t1_args_hash_mismatch"],
  [/^T1 requires a matching tool-dispatch RuntimeEvent/, "t1_dispatch_mismatch"],
  [/^T1 RuntimeEvents do not share one execution identity/, "t1_execution_identity_mismatch"],
  [/^Tool operation identity conflict for/, "tool_operation_identity_conflict"],
  // T2 (assertOutcomeInput, commitToolOutcomeSync, assertOutcomeIdentity)
  [/^T2 journal identity must be derived/, "t2_journal_identity"],
  [/^T2 requires a function_response RuntimeEvent/, "t2_function_response_required"],
  [/^T2 requires operation and tool-call refs/, "t2_refs_required"],
  [/^T2 requires one canonical function-response semantic lane/, "t2_lane_invalid"],
  [/^Unknown tool operation/, "unknown_tool_operation"],
  [/^Tool operation outcome identity conflict for/, "outcome_identity_conflict"],
  [/^Tool operation outcome conflict for/, "outcome_conflict"],
  [/^Tool operation compare-and-set failed/, "compare_and_set_failed"],
  [/^Missing RuntimeEvent/, "missing_event"],
  // recovery bundle (commitToolRecoveryBundle, commitRecoveryFactSync, assertExactRecoveryBundleAlreadyCommitted)
  [/^Recovery bundle requires a durable dispatch RuntimeEvent/, "recovery_dispatch_required"],
  [/^Recovery bundle requires a recovery decision/, "recovery_decision_required"],
  [/^Recovery facts violate canonical RuntimeEvent causal order/, "causal_order_violation"],
  [/^Completed recovery decision does not match the persisted outcome/, "completed_decision_mismatch"],
  [/^Parked recovery decision does not match the prepared operation/, "parked_decision_mismatch"],
  [/is already settled$/, "already_settled"],
  [/^Tool recovery bundle is incomplete/, "bundle_incomplete"],
  // projections (rebuildToolProjectionsFromRuntimeEventsSync)
  [/^Corrupt tool RuntimeEvent ledger/, "corrupt_tool_ledger"],
  [/^Corrupt tool recovery bundle/, "corrupt_recovery_bundle"],
  // AgentRun headers (agent-run-store.ts, execution-record-codec.ts, core agent-run.ts)
  [/^Invalid AgentRun header/, "invalid_agent_run_header"],
  [/^Invalid AgentRun event/, "invalid_agent_run_event"],
  [/^Invalid (session|run) id$/, "invalid_agent_run_id"],
  [/^Agent run already exists/, "run_already_exists"],
  [/^AgentRun admission identity is immutable/, "run_admission_identity_immutable"],
  [/^AgentRun Run Composition (cannot be cleared|is immutable)/, "run_composition_immutable"],
  [/^AgentRun header identity does not match/, "agent_run_identity_mismatch"],
  [/^AgentRun event identity does not match/, "agent_run_event_identity_mismatch"],
  // continuation authority (spec 30 §2.6; docs/protocol-codes.md)
  [/^Invalid continuation-start authority event/, "continuation_start_invalid"],
  [/^Continuation start requires an acquired durable claim/, "continuation_claim_missing"],
  [/^Continuation start claim identity conflict/, "continuation_start_claim_conflict"],
  [/^Continuation claim already has a different start event/, "continuation_start_conflict"],
  [/^Continuation start must be the first/, "continuation_start_not_first"],
  [/^Invalid continuation claim/, "continuation_claim_invalid"],
];

/** Upstream's typed errors whose `.code` is already the spec's code. */
const CODED_ERRORS = new Set(["ToolLedgerRejectionError", "ToolLedgerCorruptionError", "ToolRecoveryBundleValidationError"]);

/** SQLite primary result codes (node:sqlite `errcode`) that have a protocol code. */
const SQLITE_CODES = new Map([[5, "workspace_busy"], [6, "workspace_busy"], [8, "read_only"], [11, "database_corrupt"], [26, "database_corrupt"]]);

const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/;

/** The protocol error for anything upstream threw (an `OpError` passes unchanged). */
function translate(error, { event } = {}, scanner) {
  if (error instanceof OpError) return error;
  const message = String(error?.message ?? error);
  if (CODED_ERRORS.has(error?.name) && typeof error.code === "string") return new OpError(error.code, message);
  if (error?.name === "RunSealedError") return new OpError("run_sealed", message);
  for (const [pattern, code] of MESSAGE_CODES) {
    if (!pattern.test(message)) continue;
    if (code === "semantic_lane_violation" && event !== undefined && scanner) {
      // assertNoReservedToolLedgerFact drops the code validateGenericToolLedgerAppend gave;
      // ask the same upstream function for it.
      try {
        const check = scanner.validateGenericToolLedgerAppend(event);
        if (!check.ok && typeof check.code === "string") return new OpError(check.code, message);
      } catch {
        // keep the generic code
      }
    }
    return new OpError(code, message);
  }
  if (typeof error?.errcode === "number" && SQLITE_CODES.has(error.errcode & 0xff)) {
    return new OpError(SQLITE_CODES.get(error.errcode & 0xff), message);
  }
  if (typeof error?.code === "string" && (SNAKE.test(error.code) || error.code === "ENOENT")) {
    return new OpError(error.code, message);
  }
  return new OpError("internal_error", `${error?.name ?? "Error"}: ${message}`);
}

// ---------------------------------------------------------------------------------------------
// ordering helpers
// ---------------------------------------------------------------------------------------------

/** Code-point (= UTF-8 byte) order, as SQLite's BINARY collation and the reference sort. */
function compareText(a, b) {
  return Buffer.compare(Buffer.from(String(a), "utf8"), Buffer.from(String(b), "utf8"));
}

const compareKeys = (a, b) => compareText(a.sessionId, b.sessionId) || compareText(a.runId, b.runId);

// ---------------------------------------------------------------------------------------------
// the session
// ---------------------------------------------------------------------------------------------

export class StoreSession {
  constructor(upstream) {
    this.upstream = upstream;
    /** realpath of the workspace → {store, readOnly, dbFile, runs?} */
    this.opened = new Map();
    this.modules = undefined;
  }

  async mods() {
    if (!this.modules) {
      const [storage, codec, sqlite] = await Promise.all([
        importDist(this.upstream.root, "storage", "index"),
        importDist(this.upstream.root, "storage", "execution-record-codec"),
        import("node:sqlite"),
      ]);
      this.modules = { storage, codec, sqlite };
    }
    return this.modules;
  }

  async dbFile(workspace) {
    const { storage } = await this.mods();
    return storage.resolveOperationalStateDatabasePath(workspace);
  }

  // -- plumbing ---------------------------------------------------------------------------------

  release(workspace) {
    const key = keyOf(workspace);
    const entry = this.opened.get(key);
    if (!entry) return;
    this.opened.delete(key);
    entry.runs?.close?.();
    entry.store.close();
  }

  async closeAll() {
    for (const key of [...this.opened.keys()]) {
      const entry = this.opened.get(key);
      this.opened.delete(key);
      try {
        entry.runs?.close?.();
        entry.store.close();
      } catch (error) {
        process.stderr.write(`maka-ts-adapter: closing ${key}: ${error?.stack ?? error}\n`);
      }
    }
  }

  /** The writer store of `workspace` (opened implicitly, as the reference does). */
  async writer(workspace) {
    const key = keyOf(workspace);
    let entry = this.opened.get(key);
    if (!entry) entry = await this.openWriter(key);
    return entry;
  }

  async openWriter(key) {
    const { storage } = await this.mods();
    let store;
    try {
      store = storage.createWorkspaceRuntimeStore(key);
    } catch (error) {
      throw translate(error);
    }
    const entry = { store, readOnly: false, dbFile: await this.dbFile(key), workspace: key };
    this.opened.set(key, entry);
    return entry;
  }

  async openReadOnly(key) {
    const { storage } = await this.mods();
    const dbFile = await this.dbFile(key);
    try {
      return { store: storage.createSqliteRuntimeStore(dbFile, { readOnly: true }), readOnly: true, dbFile, workspace: key };
    } catch (error) {
      if (!existsSync(dbFile)) {
        throw new OpError("store_not_found", `no store in ${key}: ${String(error?.message ?? error)}`);
      }
      throw translate(error);
    }
  }

  /** The AgentRun store on the same operational database (writer only: upstream has no read-only one). */
  async agentRuns(workspace) {
    const entry = await this.writer(workspace);
    if (entry.readOnly) {
      throw new OpError("read_only_store", `${entry.workspace} is open read-only; upstream's AgentRun store has no read-only mode`);
    }
    if (!entry.runs) {
      const { storage } = await this.mods();
      try {
        entry.runs = storage.createSqliteAgentRunStore(entry.workspace);
      } catch (error) {
        throw translate(error);
      }
    }
    return entry.runs;
  }

  ledgerFiles(key) {
    return ["runtime.sqlite", "runtime.sqlite-wal"].filter((name) => existsSync(path.join(key, name)));
  }

  // -- operations -------------------------------------------------------------------------------

  async open(params) {
    const workspace = workspaceOf(params);
    const readOnly = optBool(params, "readOnly", false);
    this.release(workspace);
    const key = keyOf(workspace);
    let entry;
    if (readOnly) {
      entry = await this.openReadOnly(key);
      this.opened.set(key, entry);
    } else {
      entry = await this.openWriter(key);
    }
    return { ledgerFiles: this.ledgerFiles(key), schemaVersion: entry.store.schemaVersion() };
  }

  async close(params) {
    this.release(workspaceOf(params));
    return {};
  }

  async createRun(params) {
    const workspace = workspaceOf(params);
    const header = reqObject(params, "header");
    const runs = await this.agentRuns(workspace);
    try {
      return { header: await runs.createRun(header) };
    } catch (error) {
      throw translate(error);
    }
  }

  async updateRun(params) {
    const workspace = workspaceOf(params);
    const sessionId = reqStr(params, "sessionId");
    const runId = reqStr(params, "runId");
    const patch = reqObject(params, "patch");
    const runs = await this.agentRuns(workspace);
    try {
      return { header: await runs.updateRun(sessionId, runId, patch) };
    } catch (error) {
      throw translate(error);
    }
  }

  async append(params) {
    const workspace = workspaceOf(params);
    const event = req(params, "event");
    const { store } = await this.writer(workspace);
    let created;
    try {
      created = await store.importRuntimeEvent(event?.sessionId, event?.runId, event);
    } catch (error) {
      throw translate(error, { event: this.canonicalOrRaw(event) }, this.upstream.scanner);
    }
    const result = { created };
    const seq = await this.eventSeq(store, event);
    if (seq !== undefined) result.eventSeq = seq;
    return result;
  }

  /** Protocol §4.2.2: upstream's `claimContinuation` (sqlite-runtime-store.ts:847). */
  async claimContinuation(params) {
    const workspace = workspaceOf(params);
    const claim = req(params, "claim");
    const { store } = await this.writer(workspace);
    try {
      const result = await store.claimContinuation({ claim });
      return { kind: result.kind };
    } catch (error) {
      throw translate(error);
    }
  }

  /** Protocol §4.2.2: `commitContinuationStart` / `commitContinuationRepairStart` (:1020-1032). */
  async commitContinuationStart(params) {
    const workspace = workspaceOf(params);
    const claim = req(params, "claim");
    const event = req(params, "event");
    const provenance = Object.hasOwn(params, "provenance") ? params.provenance : "runtime_admission";
    if (provenance !== "runtime_admission" && provenance !== "claim_repair") {
      throw new OpError("invalid_params", "params.provenance must be runtime_admission or claim_repair");
    }
    const { store } = await this.writer(workspace);
    try {
      const result = provenance === "claim_repair"
        ? await store.commitContinuationRepairStart({ claim, event })
        : await store.commitContinuationStart({ claim, event });
      return { created: result.created, runtimeEventSeq: result.runtimeEventSeq };
    } catch (error) {
      throw translate(error);
    }
  }

  canonicalOrRaw(event) {
    try {
      return this.upstream.canonical.encodeCanonicalRuntimeEvent(event).event;
    } catch {
      return event;
    }
  }

  /**
   * The immutable `event_seq` of an appended event. Upstream's append returns only `created`;
   * its insert gives each event `MAX(event_seq) + 1` of its invocation, and a run is exactly one
   * invocation, so the event's position in the run's `event_seq`-ordered read is its seq.
   * `readImmutableRuntimePrefix` also verifies the rows are 1..n without a gap; a run holding an
   * immutable `partial: true` row is refused by that prefix, so it falls back to
   * `readImmutableRuntimeEvents`. An event not among the immutable rows (a streamed partial
   * snapshot) has no seq (protocol: `eventSeq` is optional).
   */
  async eventSeq(store, event) {
    if (!isObject(event)) return undefined;
    let events;
    try {
      events = (await store.readImmutableRuntimePrefix({ sessionId: event.sessionId, runId: event.runId })).events;
    } catch {
      try {
        events = await store.readImmutableRuntimeEvents(event.sessionId, event.runId);
      } catch {
        return undefined;
      }
    }
    const index = events.findIndex((stored) => stored.id === event.id);
    return index === -1 ? undefined : index + 1;
  }

  async commitToolPrepared(params) {
    const workspace = workspaceOf(params);
    const input = {
      operationId: reqStr(params, "operationId"),
      journalEventId: reqStr(params, "journalEventId"),
      runtimeEvent: req(params, "callEvent"),
      dispatchRuntimeEvent: req(params, "dispatchEvent"),
      providerToolCallId: reqStr(params, "providerToolCallId"),
      toolName: reqStr(params, "toolName"),
      canonicalArgsHash: reqStr(params, "canonicalArgsHash"),
      recoveryMode: reqStr(params, "recoveryMode"),
      committedAt: reqInt(params, "committedAt"),
    };
    const { store } = await this.writer(workspace);
    try {
      const result = await store.commitToolPrepared(input);
      return { created: result.created, runtimeEventSeq: result.runtimeEventSeq };
    } catch (error) {
      throw translate(error);
    }
  }

  async commitToolOutcome(params) {
    const workspace = workspaceOf(params);
    const input = {
      operationId: reqStr(params, "operationId"),
      journalEventId: reqStr(params, "journalEventId"),
      runtimeEvent: req(params, "responseEvent"),
      committedAt: reqInt(params, "committedAt"),
    };
    const { store } = await this.writer(workspace);
    try {
      const result = await store.commitToolOutcome(input);
      return { created: result.created, runtimeEventSeq: result.runtimeEventSeq };
    } catch (error) {
      throw translate(error);
    }
  }

  async commitRecoveryBundle(params) {
    const workspace = workspaceOf(params);
    const input = {
      operationId: reqStr(params, "operationId"),
      reconcileRuntimeEvent: req(params, "reconcileEvent"),
      decisionRuntimeEvent: req(params, "decisionEvent"),
    };
    if (params.outcomeEvent !== undefined && params.outcomeEvent !== null) input.outcomeRuntimeEvent = params.outcomeEvent;
    const { store } = await this.writer(workspace);
    try {
      await store.commitToolRecoveryBundle(input);
      return {};
    } catch (error) {
      throw translate(error);
    }
  }

  async readEvents(params) {
    const workspace = workspaceOf(params);
    const sessionId = reqStr(params, "sessionId");
    const runId = reqStr(params, "runId");
    const { store } = await this.writer(workspace);
    try {
      return { events: await store.readImmutableRuntimeEvents(sessionId, runId) };
    } catch (error) {
      throw translate(error);
    }
  }

  async rebuildProjections(params) {
    const workspace = workspaceOf(params);
    const sessionId = optStr(params, "sessionId");
    if (sessionId !== undefined) {
      // SqliteRuntimeStore.rebuildToolProjectionsFromRuntimeEvents() takes no session; the
      // session-scoped rebuild is private to upstream (used only by conversation copy).
      throw new OpError("rebuild_scope_unsupported",
        "upstream offers no public session-scoped rebuild: rebuildToolProjectionsFromRuntimeEvents() takes no sessionId");
    }
    const { store } = await this.writer(workspace);
    try {
      const result = await store.rebuildToolProjectionsFromRuntimeEvents();
      return { operations: result.operations, journalEvents: result.journalEvents };
    } catch (error) {
      throw translate(error);
    }
  }

  // -- store.project (protocol §4.2.1) ----------------------------------------------------------

  async project(params) {
    const workspace = workspaceOf(params);
    const key = keyOf(workspace);
    checkWorkspaceDir(key);
    const dbFile = await this.dbFile(key);
    let entry = this.opened.get(key);
    let temporary = false;
    if (!entry) {
      if (!existsSync(dbFile)) {
        return { storage: "none", health: { status: "healthy" }, runs: [], unsettledOperations: [] };
      }
      entry = await this.openReadOnly(key);
      temporary = true;
    }
    try {
      return await this.projectStore(entry);
    } finally {
      if (temporary) entry.store.close();
    }
  }

  /** Keys upstream cannot list, read with one read-only connection on its database file. */
  async enumerate(dbFile) {
    const { sqlite } = await this.mods();
    const db = new sqlite.DatabaseSync(dbFile, { readOnly: true });
    try {
      db.exec("PRAGMA query_only = ON");
      const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((row) => row.name));
      const runKeys = db.prepare(`
        SELECT session_id, run_id, MIN(invocation_id) AS invocation_id FROM runtime_events GROUP BY session_id, run_id
        UNION ALL
        SELECT session_id, run_id, NULL FROM runtime_partial_snapshots
      `).all();
      const headerRows = tables.has("core_agent_runs")
        ? db.prepare("SELECT session_id, run_id, record_json FROM core_agent_runs").all()
        : [];
      const operations = db.prepare(`
        SELECT o.operation_id, e.session_id, e.run_id
        FROM tool_operations AS o LEFT JOIN runtime_events AS e ON e.event_id = o.call_event_id
        ORDER BY o.invocation_id ASC, o.operation_id ASC
      `).all();
      return { runKeys, headerRows, operations };
    } finally {
      db.close();
    }
  }

  async header(entry, row) {
    if (!entry.readOnly) {
      // the product read: the AgentRun store on the writer's operational connection
      const runs = await this.agentRuns(entry.workspace);
      return runs.readRun(row.session_id, row.run_id);
    }
    const { codec } = await this.mods();
    return codec.decodeAgentRunHeader(JSON.parse(row.record_json), { sessionId: row.session_id, runId: row.run_id });
  }

  async projectStore(entry) {
    const { store } = entry;
    const { resolver, resume, scanner } = this.upstream;
    let keys;
    try {
      keys = await this.enumerate(entry.dbFile);
    } catch (error) {
      throw translate(error);
    }
    const runs = new Map();
    const runOf = (sessionId, runId) => {
      const k = JSON.stringify([sessionId, runId]);
      if (!runs.has(k)) {
        runs.set(k, {
          sessionId, runId, invocationId: undefined, header: null, events: [], resolution: null, plan: null,
          toolOperations: [], toolJournalEvents: [],
        });
      }
      return runs.get(k);
    };
    for (const row of keys.runKeys) {
      const run = runOf(row.session_id, row.run_id);
      if (row.invocation_id !== null && row.invocation_id !== undefined) run.invocationId = row.invocation_id;
    }
    for (const row of keys.headerRows) {
      const run = runOf(row.session_id, row.run_id);
      try {
        run.header = await this.header(entry, row);
      } catch (error) {
        run.header = null;
        run.headerError = translate(error);
      }
    }
    let unreadable;
    for (const run of runs.values()) {
      try {
        run.events = await store.readImmutableRuntimeEvents(run.sessionId, run.runId);
      } catch (error) {
        run.events = null;
        run.readError = translate(error);
      }
      if (run.events !== null) {
        run.resolution = resolver.resolveRuntimeRecovery(run.events);
        run.plan = resume.buildResumePlanFromRuntimeEvents(run.events);
      }
    }
    // Store-wide health: upstream's scanner over every immutable event, ordered as the store's
    // own gate reads them (invocation_id, event_seq, event_id: refreshToolLedgerHealth).
    const byInvocation = [...runs.values()].filter((run) => run.invocationId !== undefined)
      .sort((a, b) => compareText(a.invocationId, b.invocationId));
    for (const run of byInvocation) {
      if (run.events === null && unreadable === undefined) unreadable = run.readError;
    }
    let health = { status: "healthy" };
    if (unreadable !== undefined) {
      health = { status: "unreadable", code: unreadable.code, message: unreadable.message };
    } else {
      const scan = scanner.scanToolLedger(byInvocation.flatMap((run) => run.events));
      const issue = scan.issues[0];
      if (issue) {
        // what the store's gate throws for this issue (assertWorkspaceToolLedgerHealthy)
        const error = new scanner.ToolLedgerCorruptionError(issue.code, issue.eventId);
        health = { status: "corrupt", code: error.code, eventId: error.eventId, message: error.message };
      }
    }
    for (const row of keys.operations) {
      if (row.session_id === null || row.session_id === undefined) continue; // call event missing: no run to attach to
      const run = runs.get(JSON.stringify([row.session_id, row.run_id]));
      if (!run) continue;
      try {
        const record = await store.readToolOperation(row.operation_id);
        if (record === undefined) continue;
        run.toolOperations.push(record);
        run.toolJournalEvents.push(...(await store.readToolJournal(row.operation_id)));
      } catch (error) {
        throw translate(error);
      }
    }
    let unsettled;
    try {
      unsettled = (await store.listUnsettledToolOperations()).map((record) => record.operationId);
    } catch (error) {
      throw translate(error);
    }
    return {
      storage: "sqlite",
      health,
      runs: [...runs.values()].sort(compareKeys).map((run) => ({
        sessionId: run.sessionId,
        runId: run.runId,
        header: run.header,
        events: run.events,
        resolution: run.resolution,
        plan: run.plan,
        toolOperations: run.toolOperations,
        toolJournalEvents: run.toolJournalEvents,
      })),
      unsettledOperations: unsettled,
    };
  }

  operations() {
    const bind = (method) => (params) => method.call(this, params);
    return {
      "store.open": bind(this.open),
      "store.close": bind(this.close),
      "store.create_run": bind(this.createRun),
      "store.update_run": bind(this.updateRun),
      "store.append": bind(this.append),
      "store.commit_tool_prepared": bind(this.commitToolPrepared),
      "store.commit_tool_outcome": bind(this.commitToolOutcome),
      "store.commit_recovery_bundle": bind(this.commitRecoveryBundle),
      "store.read_events": bind(this.readEvents),
      "store.project": bind(this.project),
      "store.rebuild_projections": bind(this.rebuildProjections),
      "store.claim_continuation": bind(this.claimContinuation),
      "store.commit_continuation_start": bind(this.commitContinuationStart),
    };
  }
}
