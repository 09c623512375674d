#!/usr/bin/env node
// maka-conformance protocol-v1 adapter in plain Node.js (standard library only).
// Claims the capability `ledger.codec`: ledger.args_hash, ledger.encode, ledger.decode,
// ledger.predicates (spec 10 §1-§2; conformance/vectors/README.md).
//
// Written from the documents only (docs/adapter-guide.md, docs/protocol.md, the vectors README,
// the vectors and the spec); see GUIDE-GAPS.md for every place where they were not enough.

import { createHash } from "node:crypto";

const CAPABILITIES = ["ledger.codec"];

// ---------------------------------------------------------------------------------------------
// Errors carried as protocol error values

class OpError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const MSG_SCHEMA = "Invalid RuntimeEvent schema";
const MSG_NOT_LOSSLESS = "RuntimeEvent is not losslessly serializable";
const MSG_NOT_STRICT_ARGS = "Tool arguments must be strict JSON values";
const MSG_NO_TOOL_NAME = "canonicalArgsHash requires a tool name";

const schemaError = () => new OpError("invalid_runtime_event", MSG_SCHEMA);
const losslessError = () => new OpError("runtime_event_not_serializable", MSG_NOT_LOSSLESS);

// ---------------------------------------------------------------------------------------------
// JSON helpers (values come from JSON.parse, so every number is an IEEE double, `-0` stays
// negative zero, and a `__proto__` key is an own data property)

const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isString = (v) => typeof v === "string";
const isNonEmptyString = (v) => typeof v === "string" && v.length > 0;
const isBool = (v) => typeof v === "boolean";
const isFiniteNumber = (v) => typeof v === "number" && Number.isFinite(v);

// Assign without ever triggering the `__proto__` setter.
function setOwn(o, k, v) {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

// Canonical array index: 0|[1-9][0-9]* with value <= 2^32 - 2 (spec 10 §2.3).
const INDEX_RE = /^(?:0|[1-9][0-9]*)$/;
function isArrayIndexKey(k) {
  return INDEX_RE.test(k) && Number(k) <= 4294967294;
}

// Two-tier key order: array-index keys numerically, then the rest by UTF-16 code units.
function orderedKeys(keys) {
  const idx = [];
  const rest = [];
  for (const k of keys) (isArrayIndexKey(k) ? idx : rest).push(k);
  idx.sort((a, b) => Number(a) - Number(b));
  rest.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)); // JS string comparison = UTF-16 code units
  return idx.concat(rest);
}

// stable_json (spec 10 §2.3). Throws `onNonStrict()` on a non-strict-JSON value.
function stableJson(value, onNonStrict) {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw onNonStrict();
      return JSON.stringify(value); // ECMAScript Number::toString; -0 prints as 0
    case "string":
      return JSON.stringify(value); // well-formed JSON.stringify: lone surrogates as \udxxx
    case "object": {
      if (Array.isArray(value)) {
        return "[" + value.map((v) => stableJson(v, onNonStrict)).join(",") + "]";
      }
      const parts = [];
      for (const k of orderedKeys(Object.keys(value))) {
        parts.push(JSON.stringify(k) + ":" + stableJson(value[k], onNonStrict));
      }
      return "{" + parts.join(",") + "}";
    }
    default:
      throw onNonStrict();
  }
}

// Deep strict equality with Object.is for numbers (so 0 and -0 differ).
function deepStrictEqual(a, b) {
  if (typeof a !== typeof b) return false;
  if (typeof a === "number") return Object.is(a, b);
  if (a === null || b === null || typeof a !== "object") return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepStrictEqual(a[i], b[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!hasOwn(b, k)) return false;
    if (!deepStrictEqual(a[k], b[k])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// canonicalArgsHash (spec 10 §2.6)

// ICU collation, CLDR root / en-US, tertiary strength, no numeric ordering: this is what
// String.prototype.localeCompare does in Node with the default locale en-US.
const COLLATOR = new Intl.Collator("en-US", { usage: "sort", sensitivity: "variant", numeric: false });

function assertStrictJson(v) {
  if (v === null || typeof v === "string" || typeof v === "boolean") return;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new OpError("args_hash_error", MSG_NOT_STRICT_ARGS);
    return;
  }
  if (Array.isArray(v)) {
    for (const e of v) assertStrictJson(e);
    return;
  }
  if (typeof v === "object") {
    for (const k of Object.keys(v)) assertStrictJson(v[k]);
    return;
  }
  throw new OpError("args_hash_error", MSG_NOT_STRICT_ARGS);
}

// Returns the compact JSON text of the mainline-v1 transform of `v`.
function mainlineV1Text(v, parentKey) {
  if (Array.isArray(v)) {
    let items = v.map((e) => mainlineV1Text(e, undefined));
    if (parentKey === "required" || parentKey === "enum") {
      // Array.prototype.sort is stable (ES2019+).
      items = items.slice().sort((a, b) => COLLATOR.compare(a, b));
    }
    return "[" + items.join(",") + "]";
  }
  if (isPlainObject(v)) {
    const parts = [];
    for (const k of orderedKeys(Object.keys(v))) {
      if (k === "__proto__") continue;
      parts.push(JSON.stringify(k) + ":" + mainlineV1Text(v[k], k));
    }
    return "{" + parts.join(",") + "}";
  }
  if (typeof v === "number") return JSON.stringify(v); // -0 -> "0"
  return JSON.stringify(v);
}

function canonicalArgsHash(toolName, args) {
  if (typeof toolName !== "string" || toolName.length === 0) {
    throw new OpError("args_hash_error", MSG_NO_TOOL_NAME);
  }
  assertStrictJson(args);
  const body = mainlineV1Text({ toolName, args }, undefined);
  return "sha256:" + createHash("sha256").update(body, "utf8").digest("hex");
}

// ---------------------------------------------------------------------------------------------
// RuntimeEvent decode (spec 10 §1, §2.1, §5.1)

const ENVELOPE_REQUIRED = ["id", "invocationId", "runId", "sessionId", "turnId", "ts", "partial", "role", "author"];
const ENVELOPE_OPTIONAL = ["branch", "origin", "modelVisibility", "status", "content", "actions", "refs"];
const ENVELOPE_KEYS = new Set([...ENVELOPE_REQUIRED, ...ENVELOPE_OPTIONAL]);
const ROLES = new Set(["user", "model", "tool", "system"]);
const AUTHORS = new Set(["user", "host", "agent", "tool", "system"]);
const ORIGINS = new Set(["provider", "code_mode"]);
const VISIBILITIES = new Set(["visible", "hidden"]);
const STATUSES = new Set(["streaming", "completed", "failed", "aborted", "cancelled"]);
const TERMINAL_STATUSES = new Set(["completed", "failed", "aborted", "cancelled"]);
const RECOVERY_MODES = new Set(["replay_safe", "idempotent", "reconcile", "reattach", "outcome_unknown", "never_auto_retry"]);
const T1 = "t1_after_preflight_v1";
const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;
const isDigest = (v) => typeof v === "string" && DIGEST_RE.test(v);
const isSafeInt = (v) => typeof v === "number" && Number.isSafeInteger(v);
const REQUEST_ID_MAX_BYTES = 256; // spec says "bounded bytes"; a 257-byte id must fail (vectors)
const isBoundedId = (v) => isNonEmptyString(v) && Buffer.byteLength(v, "utf8") <= REQUEST_ID_MAX_BYTES;

function check(cond) {
  if (!cond) throw schemaError();
}

// exact key set: every key of `o` is allowed, every required key present
function checkKeys(o, required, optional = []) {
  check(isPlainObject(o));
  const allowed = new Set([...required, ...optional]);
  for (const k of Object.keys(o)) check(allowed.has(k));
  for (const k of required) check(hasOwn(o, k));
}

function normalizeText(c) {
  checkKeys(c, ["kind", "text"], ["displayText", "attachments", "quotes", "inlineReferences", "origin", "steering", "providerOptions"]);
  check(isString(c.text));
  if (hasOwn(c, "displayText")) check(isString(c.displayText));
  if (hasOwn(c, "attachments")) {
    check(Array.isArray(c.attachments));
    for (const a of c.attachments) {
      check(isPlainObject(a));
      if (hasOwn(a, "bytes")) check(isFiniteNumber(a.bytes) && a.bytes >= 0);
    }
  }
  if (hasOwn(c, "quotes")) {
    check(Array.isArray(c.quotes));
    for (const q of c.quotes) {
      check(isPlainObject(q) && isString(q.text));
      if (hasOwn(q, "label")) check(isString(q.label));
      if (hasOwn(q, "sourceTurnId")) check(isString(q.sourceTurnId));
    }
  }
  if (hasOwn(c, "inlineReferences")) check(Array.isArray(c.inlineReferences));
  if (hasOwn(c, "origin")) check(isPlainObject(c.origin) && isString(c.origin.kind));
  if (hasOwn(c, "steering")) check(c.steering === true);
  if (hasOwn(c, "providerOptions")) check(isPlainObject(c.providerOptions));

  const out = { kind: "text", text: c.text };
  if (hasOwn(c, "displayText") && c.displayText !== c.text) out.displayText = c.displayText;
  if (hasOwn(c, "attachments") && c.attachments.length > 0) {
    out.attachments = c.attachments.map((a) => {
      if (hasOwn(a, "bytes") && Object.is(a.bytes, -0)) {
        const copy = {};
        for (const k of Object.keys(a)) setOwn(copy, k, a[k]);
        copy.bytes = 0;
        return copy;
      }
      return a;
    });
  }
  if (hasOwn(c, "quotes") && c.quotes.length > 0) {
    out.quotes = c.quotes.map((q) => {
      const r = { text: q.text };
      if (hasOwn(q, "label")) r.label = q.label;
      if (hasOwn(q, "sourceTurnId")) r.sourceTurnId = q.sourceTurnId;
      return r;
    });
  }
  if (hasOwn(c, "inlineReferences")) out.inlineReferences = c.inlineReferences;
  if (hasOwn(c, "origin")) {
    if (c.origin.kind === "automation") {
      const o = {};
      for (const k of Object.keys(c.origin)) setOwn(o, k, c.origin[k]);
      o.kind = "legacy_automation";
      out.origin = o;
    } else {
      out.origin = c.origin;
    }
  }
  if (hasOwn(c, "steering")) out.steering = true;
  if (hasOwn(c, "providerOptions")) out.providerOptions = c.providerOptions;
  return out;
}

function decodeContent(c) {
  check(isPlainObject(c) && isString(c.kind));
  switch (c.kind) {
    case "text":
      return normalizeText(c);
    case "thinking":
      checkKeys(c, ["kind", "text"], ["signature", "providerOptions"]);
      check(isString(c.text));
      if (hasOwn(c, "signature")) check(isString(c.signature));
      if (hasOwn(c, "providerOptions")) check(isPlainObject(c.providerOptions));
      return c;
    case "function_call":
      checkKeys(c, ["kind", "id", "name", "args"], ["providerOptions", "providerExecuted"]);
      check(isString(c.id) && isString(c.name));
      if (hasOwn(c, "providerOptions")) check(isPlainObject(c.providerOptions));
      if (hasOwn(c, "providerExecuted")) check(isBool(c.providerExecuted));
      return c;
    case "function_response":
      checkKeys(c, ["kind", "id", "name", "result"], ["isError", "providerExecuted", "providerOutput"]);
      check(isString(c.id) && isString(c.name));
      if (hasOwn(c, "isError")) check(isBool(c.isError));
      if (hasOwn(c, "providerExecuted")) check(isBool(c.providerExecuted));
      return c;
    case "error":
      checkKeys(c, ["kind", "message"], ["code", "reason", "details"]);
      check(isString(c.message));
      if (hasOwn(c, "code")) check(isString(c.code));
      if (hasOwn(c, "reason")) check(isString(c.reason));
      if (hasOwn(c, "details")) {
        const d = c.details;
        check(isPlainObject(d) || (Array.isArray(d) && d.every(isString)));
      }
      return c;
    default:
      throw schemaError();
  }
}

function checkToolDispatch(d) {
  checkKeys(d, ["protocol", "operationId", "providerToolCallId", "toolName", "canonicalArgsHash", "recoveryMode"]);
  check(d.protocol === T1);
  check(isString(d.operationId) && isString(d.providerToolCallId) && isString(d.toolName) && isString(d.canonicalArgsHash));
  check(RECOVERY_MODES.has(d.recoveryMode));
}

function checkToolRecovery(r) {
  checkKeys(r, ["kind", "version", "payload"]);
  check(r.version === 1);
  const p = r.payload;
  if (r.kind === "maka.tool.reconcile_result") {
    checkKeys(p, ["protocol", "operationId", "observation", "observationSchema", "observationDigest"]);
    check(p.protocol === "tool_reconcile_v1");
    check(isNonEmptyString(p.operationId));
    check(["matches_expected_state", "matches_prior_state", "diverged", "unreadable"].includes(p.observation));
    check(p.observationSchema === "state_identity_v1");
    check(isDigest(p.observationDigest));
  } else if (r.kind === "maka.tool.recovery_decision") {
    check(isPlainObject(p));
    if (p.disposition === "completed") {
      checkKeys(p, ["protocol", "operationId", "disposition", "reasonCode", "outcomeEventId", "evidenceEventIds"]);
      check(p.reasonCode === "reconcile_matches_expected_state");
      check(isNonEmptyString(p.outcomeEventId));
    } else if (p.disposition === "parked") {
      checkKeys(p, ["protocol", "operationId", "disposition", "reasonCode", "evidenceEventIds"]);
      check(["reconcile_matches_prior_state", "reconcile_diverged", "reconcile_unreadable"].includes(p.reasonCode));
    } else {
      throw schemaError();
    }
    check(p.protocol === "tool_recovery_v1");
    check(isNonEmptyString(p.operationId));
    const ev = p.evidenceEventIds;
    check(Array.isArray(ev) && ev.length > 0 && ev.every(isNonEmptyString));
    check(new Set(ev).size === ev.length);
  } else {
    throw schemaError();
  }
}

function checkContinuationStart(cs) {
  checkKeys(cs, ["protocol", "provenance", "claimId", "boundaryDigest", "immediateSource", "replayManifestDigest", "providerProjectionVersion", "providerReplayDigest"]);
  check(cs.protocol === "continuation_start_v2");
  check(cs.provenance === "runtime_admission" || cs.provenance === "claim_repair");
  check(isNonEmptyString(cs.claimId));
  check(isDigest(cs.boundaryDigest));
  const s = cs.immediateSource;
  checkKeys(s, ["sessionId", "invocationId", "runId", "turnId", "highWater", "prefixDigest"]);
  for (const k of ["sessionId", "invocationId", "runId", "turnId"]) check(isNonEmptyString(s[k]));
  check(isSafeInt(s.highWater) && s.highWater > 0);
  check(isDigest(s.prefixDigest));
  check(isDigest(cs.replayManifestDigest));
  check(cs.providerProjectionVersion === 1);
  check(isDigest(cs.providerReplayDigest));
}

const ACTION_KEYS = new Set([
  "stateDelta", "artifactDelta", "permissionRequest", "permissionDecision", "permissionAnswerAccepted",
  "permissionClosureAccepted", "userQuestionRequest", "userQuestionAnswerAccepted", "transferToAgent",
  "endInvocation", "tokenUsage", "toolDispatch", "toolRecovery", "runtimeProtocol", "continuationStart",
  "workspaceFact",
]);

function checkActions(a, event) {
  check(isPlainObject(a));
  const keys = Object.keys(a);
  for (const k of keys) check(ACTION_KEYS.has(k));
  if (hasOwn(a, "stateDelta")) check(isPlainObject(a.stateDelta));
  if (hasOwn(a, "artifactDelta")) {
    check(isPlainObject(a.artifactDelta));
    for (const k of Object.keys(a.artifactDelta)) {
      const v = a.artifactDelta[k];
      check(isString(v) || isBool(v) || isFiniteNumber(v));
    }
  }
  if (hasOwn(a, "permissionRequest")) check(isPlainObject(a.permissionRequest));
  if (hasOwn(a, "permissionDecision")) {
    const d = a.permissionDecision;
    checkKeys(d, ["requestId", "decision"], ["rememberForTurn", "reviewer", "rationale", "riskLevel", "toolName"]);
    check(isBoundedId(d.requestId));
    check(isString(d.decision));
    if (hasOwn(d, "rememberForTurn")) check(isBool(d.rememberForTurn));
    if (hasOwn(d, "reviewer")) check(isString(d.reviewer));
    if (hasOwn(d, "rationale")) check(isString(d.rationale));
    if (hasOwn(d, "riskLevel")) check(isString(d.riskLevel));
    if (hasOwn(d, "toolName")) check(isBoundedId(d.toolName));
  }
  for (const k of ["permissionAnswerAccepted", "userQuestionAnswerAccepted"]) {
    if (hasOwn(a, k)) {
      checkKeys(a[k], ["requestId"]);
      check(isBoundedId(a[k].requestId));
    }
  }
  if (hasOwn(a, "permissionClosureAccepted")) {
    const p = a.permissionClosureAccepted;
    checkKeys(p, ["requestId", "reason"]);
    check(isBoundedId(p.requestId));
    check(p.reason === "timed_out");
    check(keys.length === 1);
  }
  if (hasOwn(a, "userQuestionRequest")) check(isPlainObject(a.userQuestionRequest));
  if (hasOwn(a, "transferToAgent")) check(isString(a.transferToAgent));
  if (hasOwn(a, "endInvocation")) check(isBool(a.endInvocation));
  if (hasOwn(a, "tokenUsage")) {
    const t = a.tokenUsage;
    check(isPlainObject(t) && hasOwn(t, "input") && hasOwn(t, "output"));
    check(isFiniteNumber(t.input) && isFiniteNumber(t.output));
  }
  if (hasOwn(a, "toolDispatch")) checkToolDispatch(a.toolDispatch);
  if (hasOwn(a, "toolRecovery")) checkToolRecovery(a.toolRecovery);
  if (hasOwn(a, "runtimeProtocol")) {
    checkKeys(a.runtimeProtocol, ["toolBoundary"]);
    check(a.runtimeProtocol.toolBoundary === T1);
  }
  // The carrying event's shape (spec 10 §1.3.2) is the store's start writer's business, not
  // decode's (docs/protocol.md §4.2.2): only the start's own fields are checked here.
  if (hasOwn(a, "continuationStart")) checkContinuationStart(a.continuationStart);
  if (hasOwn(a, "workspaceFact")) check(isPlainObject(a.workspaceFact));
}

const REF_STRING_KEYS = [
  "toolCallId", "operationId", "parentToolCallId", "parentOperationId", "stepId", "storedMessageId",
  "traceEventId", "providerEventId", "providerRequestTraceId", "artifactId", "sourceInvocationId",
  "sourceRunId", "sourceTurnId",
];

function checkRefs(r) {
  checkKeys(r, [], [...REF_STRING_KEYS, "sourceMessageDigest", "sourceRuntimeEventHighWater"]);
  for (const k of REF_STRING_KEYS) if (hasOwn(r, k)) check(isString(r[k]));
  if (hasOwn(r, "sourceMessageDigest")) check(isDigest(r.sourceMessageDigest));
  if (hasOwn(r, "sourceRuntimeEventHighWater")) {
    const v = r.sourceRuntimeEventHighWater;
    check(isSafeInt(v) && v >= 0);
  }
}

function decodeEvent(e) {
  check(isPlainObject(e));
  for (const k of Object.keys(e)) check(ENVELOPE_KEYS.has(k));
  for (const k of ENVELOPE_REQUIRED) check(hasOwn(e, k));
  for (const k of ["id", "invocationId", "runId", "sessionId", "turnId"]) check(isNonEmptyString(e[k]));
  check(isFiniteNumber(e.ts));
  check(isBool(e.partial));
  check(ROLES.has(e.role));
  check(AUTHORS.has(e.author));
  if (hasOwn(e, "branch")) check(isString(e.branch));
  if (hasOwn(e, "origin")) check(ORIGINS.has(e.origin));
  if (hasOwn(e, "modelVisibility")) check(VISIBILITIES.has(e.modelVisibility));
  if (hasOwn(e, "status")) check(STATUSES.has(e.status));
  let content;
  if (hasOwn(e, "content")) content = decodeContent(e.content);
  if (hasOwn(e, "actions")) checkActions(e.actions, e);
  if (hasOwn(e, "refs")) checkRefs(e.refs);

  const out = {};
  for (const k of Object.keys(e)) out[k] = e[k]; // keys are from the closed envelope set
  if (content !== undefined) out.content = content;
  return out;
}

// ---------------------------------------------------------------------------------------------
// encode (spec 10 §2.2)

function encodeEvent(e) {
  const d = decodeEvent(e);
  const text = stableJson(d, losslessError);
  let again;
  try {
    again = decodeEvent(JSON.parse(text));
  } catch {
    throw losslessError();
  }
  if (!deepStrictEqual(again, d)) throw losslessError();
  return text;
}

// ---------------------------------------------------------------------------------------------
// predicates (spec 10 §1.5) — on the raw event, never failing

function predicates(e) {
  const ev = isPlainObject(e) ? e : {};
  const actions = isPlainObject(ev.actions) ? ev.actions : {};
  const terminal = TERMINAL_STATUSES.has(ev.status) || actions.endInvocation === true;
  let modelVisible = false;
  if (ev.modelVisibility !== "hidden" && isPlainObject(ev.content)) {
    switch (ev.content.kind) {
      case "text":
        modelVisible = typeof ev.content.text === "string" && ev.content.text.length > 0;
        break;
      case "thinking":
      case "function_call":
      case "function_response":
        modelVisible = true;
        break;
      default:
        modelVisible = false;
    }
  }
  return { terminal, modelVisible };
}

// ---------------------------------------------------------------------------------------------
// Operation table

function invalidParams(msg) {
  return new OpError("invalid_params", msg);
}

// `event` (a JSON value) or `eventJson` (JSON text parsed with double semantics)
function eventFromParams(p) {
  if (!isPlainObject(p)) throw invalidParams("params must be an object");
  const hasEvent = hasOwn(p, "event");
  const hasText = hasOwn(p, "eventJson");
  if (hasEvent === hasText) throw invalidParams("exactly one of event / eventJson is required");
  if (hasEvent) return p.event;
  if (!isString(p.eventJson)) throw invalidParams("eventJson must be a string");
  try {
    return JSON.parse(p.eventJson);
  } catch {
    throw new OpError("not_strict_json", MSG_SCHEMA);
  }
}

const handlers = {
  "ledger.args_hash": (p) => {
    if (!isPlainObject(p) || !isString(p.toolName) || !isString(p.argsJson)) {
      throw invalidParams("toolName and argsJson (strings) are required");
    }
    let args;
    try {
      args = JSON.parse(p.argsJson);
    } catch {
      throw new OpError("not_strict_json", MSG_NOT_STRICT_ARGS);
    }
    return { hash: canonicalArgsHash(p.toolName, args) };
  },
  "ledger.encode": (p) => ({ canonicalJson: encodeEvent(eventFromParams(p)) }),
  "ledger.decode": (p) => ({ event: decodeEvent(eventFromParams(p)) }),
  "ledger.predicates": (p) => {
    if (!isPlainObject(p) || !hasOwn(p, "event")) throw invalidParams("event is required");
    return predicates(p.event);
  },
};

// Operations of capabilities this adapter does not claim (protocol §4).
const UNCLAIMED_OPS = new Set([
  "ledger.lane", "ledger.generic_append", "ledger.scan", "ledger.validate_transition", "ledger.validate_bundle",
  "ledger.interpret", "ledger.resolve", "ledger.code_mode_commits",
  "ledger.plan", "ledger.failpoint_catalog", "ledger.segment_replay", "ledger.composite_replay", "ledger.prefix_digest",
  "store.open", "store.close", "store.create_run", "store.update_run", "store.append", "store.commit_tool_prepared",
  "store.commit_tool_outcome", "store.commit_recovery_bundle", "store.read_events", "store.project",
  "store.rebuild_projections", "runtime.run_turn", "runtime.repair", "runtime.resume", "faults.arm",
]);

// ---------------------------------------------------------------------------------------------
// Serialisation of responses. JSON.stringify writes -0 as "0"; a decoded event may legitimately
// hold -0 (decode does not round-trip), so numbers are written with a sign-preserving writer.

function writeJson(v) {
  if (v === null || v === undefined) return "null";
  switch (typeof v) {
    case "number":
      if (Object.is(v, -0)) return "-0.0";
      return Number.isFinite(v) ? JSON.stringify(v) : "null";
    case "string":
    case "boolean":
      return JSON.stringify(v);
    case "object":
      if (Array.isArray(v)) return "[" + v.map(writeJson).join(",") + "]";
      return "{" + Object.keys(v).filter((k) => v[k] !== undefined)
        .map((k) => JSON.stringify(k) + ":" + writeJson(v[k])).join(",") + "}";
    default:
      return "null";
  }
}

function answer(msg) {
  process.stdout.write(writeJson(msg) + "\n");
}

function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    return answer({ id: null, ok: false, error: { code: "invalid_params", message: "request is not JSON" } });
  }
  if (!isPlainObject(req) || !Number.isSafeInteger(req.id) || req.id < 0) {
    return answer({ id: null, ok: false, error: { code: "invalid_params", message: "request without a usable id" } });
  }
  const { id, op } = req;
  const params = hasOwn(req, "params") ? req.params : {};
  if (op === "hello") {
    if (isPlainObject(params) && hasOwn(params, "protocol") && params.protocol !== 1) {
      return answer({ id, ok: false, error: { code: "protocol_version_unsupported", message: `protocol ${params.protocol} is not supported; this adapter speaks 1` } });
    }
    return answer({ id, ok: true, result: {
      protocol: 1,
      implementation: { name: "node-ledger-codec-adapter", version: "0.1.0" },
      capabilities: CAPABILITIES,
    } });
  }
  const handler = typeof op === "string" && hasOwn(handlers, op) ? handlers[op] : undefined;
  if (!handler) {
    if (UNCLAIMED_OPS.has(op)) return answer({ id, ok: false, error: { code: "not_claimed", message: `${op} is not claimed` } });
    return answer({ id, ok: false, error: { code: "unknown_op", message: `no operation ${op}` } });
  }
  try {
    answer({ id, ok: true, result: handler(params) });
  } catch (e) {
    const code = e instanceof OpError ? e.code : "internal_error";
    answer({ id, ok: false, error: { code, message: String((e && e.message) ?? e) } });
  }
}

// Lines are cut at the byte 0x0A only (protocol §1.3). Not `node:readline`: since Node 24 it
// also splits at U+2028/U+2029, which the harness sends raw inside JSON strings
// (PROTOCOL-FRAMING-001).
function onLine(line) {
  if (line.trim() === "") return;
  try {
    handle(line);
  } catch (e) {
    process.stderr.write(`adapter: unexpected failure: ${e && e.stack}\n`);
  }
}

let pending = Buffer.alloc(0);
process.stdin.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  let nl;
  while ((nl = pending.indexOf(0x0a)) !== -1) {
    const line = pending.subarray(0, nl).toString("utf8");
    pending = pending.subarray(nl + 1);
    onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
  }
});
process.stdin.on("end", () => {
  if (pending.length) onLine(pending.toString("utf8"));
  process.exit(0);
});
