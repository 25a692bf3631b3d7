import { createHash } from "node:crypto";

/**
 * canonicalJSON is the RFC 8785 (JCS) canonical form of a JSON value: object members
 * sorted by their names' UTF-16 code units, no white space, numbers in ECMAScript's
 * shortest form and strings escaped as JSON.stringify does (which is the ECMAScript
 * serialisation RFC 8785 adopts). Non-finite numbers and values that are not JSON throw.
 */
export function canonicalJSON(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`canonical JSON: ${value} is not a JSON number`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJSON).join(",")}]`;
  if (typeof value === "object") {
    const obj = value as Record<string, unknown>;
    // The default sort compares UTF-16 code units, as RFC 8785 section 3.2.3 orders names.
    const names = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
    return `{${names.map((k) => `${JSON.stringify(k)}:${canonicalJSON(obj[k])}`).join(",")}}`;
  }
  throw new TypeError(`canonical JSON: a ${typeof value} is not a JSON value`);
}

/** sha256Hex is the lowercase hex SHA-256 of a string's UTF-8 bytes. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * manifestHash is a release's manifestHash: the lowercase hex SHA-256 of the RFC 8785
 * canonical form of its contentRefs (a JSON array).
 */
export function manifestHash(contentRefs: readonly unknown[]): string {
  return sha256Hex(canonicalJSON(contentRefs));
}
