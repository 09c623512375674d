// Errors are values (docs/protocol.md §2.2): a handler throws an `OpError`, the loop answers
// `{"ok": false, "error": {"code", "message"}}`. Anything else becomes `internal_error`.

export class OpError extends Error {
  constructor(code, message, details) {
    super(message);
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}

export const invalidParams = (message) => new OpError("invalid_params", message);

/** The protocol error object for anything a handler threw. */
export function errorValue(error) {
  if (error instanceof OpError) {
    const value = { code: error.code, message: error.message };
    if (error.details !== undefined) value.details = error.details;
    return value;
  }
  const name = error?.name ?? "Error";
  return { code: "internal_error", message: `${name}: ${String(error?.message ?? error)}` };
}
