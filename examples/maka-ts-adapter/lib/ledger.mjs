// `ledger.*` operations (docs/protocol.md §4.1) answered by upstream's own pure functions.
//
// Each handler takes the operation's params (a golden vector's `input`) and returns the result
// form of conformance/vectors/README.md. Upstream's functions are called as they are; this
// module only translates shapes (upstream's scan records, plan, errors) into the protocol's.
// Where upstream throws on an input the protocol says must be answered, the exception goes out
// as `internal_error` with its message: the harness, not this adapter, decides what that means.

import { OpError, invalidParams } from "./errors.mjs";

const MSG_SCHEMA = "Invalid RuntimeEvent schema";
const MSG_NOT_LOSSLESS = "RuntimeEvent is not losslessly serializable";

/** The capability of every ledger operation (protocol §4.1). */
export const LEDGER_CAPABILITY = {
  "ledger.args_hash": "ledger.codec",
  "ledger.encode": "ledger.codec",
  "ledger.decode": "ledger.codec",
  "ledger.predicates": "ledger.codec",
  "ledger.lane": "ledger.resolver",
  "ledger.generic_append": "ledger.resolver",
  "ledger.scan": "ledger.resolver",
  "ledger.validate_transition": "ledger.resolver",
  "ledger.validate_bundle": "ledger.resolver",
  "ledger.interpret": "ledger.resolver",
  "ledger.resolve": "ledger.resolver",
  "ledger.code_mode_commits": "ledger.resolver",
  "ledger.plan": "ledger.plan",
  "ledger.failpoint_catalog": "ledger.plan",
  "ledger.segment_replay": "ledger.plan",
  "ledger.composite_replay": "ledger.plan",
  "ledger.prefix_digest": "ledger.plan",
};

const hasOwn = (o, k) => o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k);

function need(params, ...keys) {
  for (const key of keys) if (!hasOwn(params, key)) throw invalidParams(`params.${key} is required`);
}

function needList(params, key) {
  need(params, key);
  if (!Array.isArray(params[key])) throw invalidParams(`params.${key} must be an array`);
  return params[key];
}

/** `event` or `eventJson` (JSON text, parsed with double semantics: JSON.parse is exactly that). */
function eventOf(params) {
  if (hasOwn(params, "eventJson")) {
    if (typeof params.eventJson !== "string") throw invalidParams("params.eventJson must be a string");
    try {
      return JSON.parse(params.eventJson);
    } catch (error) {
      throw invalidParams(`params.eventJson is not JSON: ${error.message}`);
    }
  }
  need(params, "event");
  return params.event;
}

/** Upstream throws plain `Error`s; the spec's message decides the (free) code. */
function codecError(error) {
  const message = String(error?.message ?? error);
  if (message.includes(MSG_NOT_LOSSLESS)) return new OpError("runtime_event_not_serializable", message);
  if (message.includes(MSG_SCHEMA)) return new OpError("invalid_runtime_event", message);
  return new OpError("internal_error", message);
}

const eventId = (event) => (event !== null && typeof event === "object" && typeof event.id === "string" ? event.id : undefined);

/** An upstream scan record in the protocol's shape (docs/protocol.md §4.1, `ledger.scan`). */
function scanRecord(operation) {
  return {
    toolCallId: operation.toolCallId,
    toolName: operation.toolName,
    operationId: operation.operationId,
    callEventId: eventId(operation.callEvent),
    dispatchEventId: eventId(operation.dispatchEvent),
    responseEventId: eventId(operation.responseEvent),
    reconcileEventIds: operation.reconcileEvents.map(eventId),
    decisionEventIds: operation.decisionEvents.map(eventId),
    issues: operation.issues,
  };
}

/** Upstream's error text for an immutable prefix → the protocol's `prefix_*` code. */
const PREFIX_CODES = [
  [/high-water .* is unavailable/, "prefix_high_water_unavailable"],
  [/Invalid immutable RuntimeEvent prefix high-water/, "prefix_high_water_invalid"],
  [/prefix is empty/, "prefix_empty"],
  [/event_seq gap/, "prefix_seq_gap"],
  [/partial snapshot/, "prefix_partial_event"],
  [/identity mismatch/, "prefix_identity_drift"],
  [/prefix identity|Invalid RuntimeEvent prefix identity/i, "prefix_identity_invalid"],
  [/losslessly serializable|Invalid RuntimeEvent schema/, "prefix_event_not_encodable"],
];

function prefixCode(error) {
  const message = String(error?.message ?? error);
  for (const [pattern, code] of PREFIX_CODES) if (pattern.test(message)) return code;
  return "prefix_invalid";
}

class PrefixRefusal extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export function ledgerOperations(up) {
  const { runtimeEvent, canonical, argsIdentity, scanner, bundle, boundary, resolver, resume, replay } = up;

  /**
   * The immutable prefix of one run given as its events (`event_seq` = position + 1), cut to
   * the first `highWater` rows as upstream's store read does (`event_seq <= H`), then required
   * to end exactly at H (`readImmutableRuntimePrefix`, storage/src/sqlite-runtime-store.ts).
   * The identity is the first event's, as in that read.
   */
  function prefixOf(events, highWater) {
    if (!Array.isArray(events)) throw invalidParams("params.events must be an array");
    if (highWater !== undefined && (!Number.isSafeInteger(highWater) || highWater <= 0)) {
      throw new PrefixRefusal("prefix_high_water_invalid", "Invalid immutable RuntimeEvent prefix high-water");
    }
    const rows = events.map((event, index) => ({ eventSeq: index + 1, event }))
      .filter((row) => highWater === undefined || row.eventSeq <= highWater);
    if (rows.length === 0) throw new PrefixRefusal("prefix_empty", "immutable RuntimeEvent prefix is empty");
    if (highWater !== undefined && rows.at(-1).eventSeq !== highWater) {
      throw new PrefixRefusal("prefix_high_water_unavailable", `immutable RuntimeEvent prefix high-water ${highWater} is unavailable`);
    }
    const first = rows[0].event ?? {};
    const identity = { sessionId: first.sessionId, invocationId: first.invocationId, runId: first.runId, turnId: first.turnId };
    try {
      return boundary.buildImmutableRuntimePrefix(identity, rows);
    } catch (error) {
      throw new PrefixRefusal(prefixCode(error), String(error?.message ?? error));
    }
  }

  function refusal(error) {
    if (error instanceof PrefixRefusal) return new OpError(error.code, error.message);
    return error;
  }

  const version = (params) => (hasOwn(params, "providerProjectionVersion") ? params.providerProjectionVersion : 1);

  return {
    "ledger.args_hash": (params) => {
      need(params, "toolName", "argsJson");
      let args;
      try {
        args = JSON.parse(params.argsJson);
      } catch (error) {
        throw invalidParams(`params.argsJson is not JSON: ${error.message}`);
      }
      try {
        return { hash: argsIdentity.canonicalToolArgsHash(params.toolName, args) };
      } catch (error) {
        throw new OpError("args_hash_error", String(error?.message ?? error));
      }
    },
    "ledger.encode": (params) => {
      const event = eventOf(params);
      try {
        return { canonicalJson: canonical.encodeCanonicalRuntimeEvent(event).json };
      } catch (error) {
        throw codecError(error);
      }
    },
    "ledger.decode": (params) => {
      const event = eventOf(params);
      try {
        return { event: runtimeEvent.decodeRuntimeEvent(event) };
      } catch (error) {
        throw codecError(error);
      }
    },
    "ledger.predicates": (params) => {
      need(params, "event");
      return {
        terminal: runtimeEvent.isTerminalRuntimeEvent(params.event),
        modelVisible: runtimeEvent.runtimeEventHasModelVisibleContent(params.event),
      };
    },
    "ledger.lane": (params) => {
      need(params, "event");
      const lane = scanner.validateToolLedgerEventLane(params.event);
      return { lane: lane.ok ? lane.lane : "conflict" };
    },
    "ledger.generic_append": (params) => {
      need(params, "event");
      const check = scanner.validateGenericToolLedgerAppend(params.event);
      return check.ok ? { ok: true } : { ok: false, code: check.code };
    },
    "ledger.scan": (params) => {
      const scan = scanner.scanToolLedger(needList(params, "events"));
      return { operations: scan.operations.map(scanRecord), issues: scan.issues, hasCorruption: scan.hasCorruption };
    },
    "ledger.validate_transition": (params) => {
      need(params, "existing", "candidates", "kind");
      const result = scanner.validateToolLedgerTransition({
        existingEvents: needList(params, "existing"),
        candidateEvents: needList(params, "candidates"),
        expectedTransition: params.kind,
      });
      return result.ok ? { ok: true } : {
        ok: false, code: result.code, eventId: result.eventId, operationId: result.operationId, toolCallId: result.toolCallId,
      };
    },
    "ledger.validate_bundle": (params) => {
      need(params, "identity", "callEvent", "dispatchEvent", "reconcileEvent", "decisionEvent");
      const result = bundle.validateToolRecoveryEventBundle({
        operation: params.identity,
        callEvent: params.callEvent,
        dispatchEvent: params.dispatchEvent,
        reconcileEvent: params.reconcileEvent,
        outcomeEvent: params.outcomeEvent,
        decisionEvent: params.decisionEvent,
      });
      return result.ok ? { ok: true, reconcile: result.reconcile, decision: result.decision } : { ok: false, code: result.code };
    },
    "ledger.interpret": (params) => {
      const events = needList(params, "events");
      const scan = scanner.scanToolLedger(events);
      // The resolver's order map: event id → index, the last index winning for a repeated id.
      const order = new Map(events.map((event, index) => [event?.id, index]));
      const index = hasOwn(params, "operationIndex") ? params.operationIndex : 0;
      const operation = scan.operations[index];
      if (operation === undefined) throw invalidParams(`no scanned operation at index ${index}`);
      const result = bundle.interpretScannedToolRecovery(operation, order);
      return result.kind === "corruption" ? { kind: result.kind, code: result.code } : { kind: result.kind };
    },
    "ledger.resolve": (params) => resolver.resolveRuntimeRecovery(needList(params, "events")),
    "ledger.code_mode_commits": (params) => {
      need(params, "now", "toolMode");
      return { commits: resolver.buildInterruptedCodeModeOutcomeCommits(needList(params, "events"), params.now, params.toolMode) };
    },
    "ledger.plan": (params) => {
      const events = needList(params, "events");
      const options = hasOwn(params, "expectedRuntimeEventHighWater") && params.expectedRuntimeEventHighWater !== null
        ? { expectedRuntimeEventHighWater: params.expectedRuntimeEventHighWater }
        : {};
      return resume.buildResumePlanFromRuntimeEvents(events, options);
    },
    "ledger.failpoint_catalog": () => ({ failpoints: resume.RUNTIME_RESUME_FAILPOINTS }),
    "ledger.segment_replay": (params) => {
      let prefix;
      try {
        prefix = prefixOf(needList(params, "events"));
      } catch (error) {
        throw refusal(error);
      }
      const result = replay.buildContinuationReplaySegment({ prefix, providerProjectionVersion: version(params) });
      if (result.kind === "blocked") return { blocked: true, blockReason: result.reason };
      return {
        blocked: false,
        trimmedSuffixEventIds: [...result.plan.segment.trimmedSuffixEventIds],
        replayEventIds: result.plan.segment.replayRuntimeEvents.map((event) => event.id),
        providerItemEventIds: result.plan.providerItems.map((item) => item.eventId),
      };
    },
    "ledger.composite_replay": (params) => {
      const segments = needList(params, "segments");
      let prefixes;
      try {
        prefixes = segments.map((segment) => {
          if (segment === null || typeof segment !== "object" || Array.isArray(segment)) {
            throw invalidParams("params.segments must be an array of objects");
          }
          return prefixOf(segment.events);
        });
      } catch (error) {
        throw refusal(error);
      }
      if (prefixes.length === 0) throw invalidParams("params.segments must not be empty");
      let result;
      try {
        result = replay.buildContinuationReplayPlan({ prefixes, providerProjectionVersion: version(params) });
      } catch (error) {
        // createRuntimeBoundaryCursor refuses a lineage that repeats a run, invocation or turn
        throw new OpError("segment_invalid", String(error?.message ?? error));
      }
      if (result.kind === "blocked") {
        return { blocked: true, blockReason: result.reason, blockedSegmentIndex: result.segmentIndex };
      }
      const plan = result.plan;
      return {
        blocked: false,
        runtimeContextEventIds: plan.runtimeContext.map((event) => event.id),
        trimmedSuffixEventIds: plan.segments.map((segment) => [...segment.trimmedSuffixEventIds]),
        boundaryRunIds: plan.boundary.segments.map((segment) => segment.identity.runId),
        providerItemEventIds: plan.providerItems.map((item) => item.eventId),
      };
    },
    "ledger.prefix_digest": (params) => {
      const events = needList(params, "events");
      const highWater = hasOwn(params, "highWater") && params.highWater !== null ? params.highWater : undefined;
      let prefix;
      try {
        prefix = prefixOf(events, highWater);
      } catch (error) {
        if (error instanceof PrefixRefusal) return { ok: false, code: error.code };
        throw error;
      }
      return {
        ok: true,
        highWater: prefix.position.lastEventSeq,
        digest: prefix.prefixDigest,
        eventIds: prefix.events.map((event) => event.id),
      };
    },
  };
}
