// errorOf on what Node throws, without a server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { errorOf } from "../dist/index.js";

test("errorOf codes a Node system error by its own code, lowered", async () => {
  // Node's errors are all class Error: by class, every file, socket and argument error
  // would read "error". Their code ("ENOENT", "ERR_INVALID_ARG_TYPE") says what happened.
  const err = await readFile("/nonexistent/ledger-test").catch((e) => e);
  assert.equal(err.code, "ENOENT");
  assert.deepEqual([errorOf(err).code, errorOf(err).details.type], ["enoent", "Error"]);
  let argErr;
  try {
    Buffer.from(7);
  } catch (e) {
    argErr = e;
  }
  assert.equal(errorOf(argErr).code, "err_invalid_arg_type");
  // A code of the ledger's alphabet is taken as it is; another is not a code.
  assert.equal(errorOf(Object.assign(new Error("x"), { code: "upstream.busy" })).code, "upstream.busy");
  assert.equal(errorOf(Object.assign(new RangeError("x"), { code: "Not A Code" })).code, "rangeerror");
  assert.equal(errorOf(Object.assign(new Error("x"), { code: 42 })).code, "error");
});
