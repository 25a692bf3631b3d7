// How one try of a call reaches the service: node:http with a keep-alive agent by default,
// or a caller's fetch. Either way the answer's body is capped, the whole exchange has a
// deadline, and a redirect is an answer like any other status, never followed.
import http from "node:http";
import https from "node:https";

/** What one try sends. */
export interface TransportRequest {
  method: string;
  /** The path and query under the base URL's origin (the base's path prefix included). */
  path: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /** From the request's start to the answer's last byte. */
  timeoutMs: number;
  /** The most bytes of an answer's body read (a larger one fails the try). */
  maxBytes: number;
}

/** What one try got: a status, its headers, and its whole body as text. */
export interface TransportAnswer {
  status: number;
  statusText: string;
  header(name: string): string | undefined;
  text: string;
}

/**
 * TransportFailure: a try that got no readable answer. sent says whether the request may
 * have reached the server; status is set when an answer's head came but its body could
 * not be read (too large, cut off, past the deadline).
 */
export class TransportFailure extends Error {
  constructor(
    message: string,
    readonly sent: boolean,
    override readonly cause?: unknown,
    readonly status?: number,
  ) {
    super(message);
  }
}

export type Transport = (r: TransportRequest) => Promise<TransportAnswer>;

/** The connection errors after which nothing reached a server. */
const notSentCodes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

/** notSent reports whether a failure happened before the request could reach a server. */
export function notSent(err: unknown): boolean {
  for (let e: any = err; e; e = e.cause) {
    if (typeof e.code === "string" && notSentCodes.has(e.code)) return true;
    if (e.errors && Array.isArray(e.errors) && e.errors.some((x: any) => notSentCodes.has(x?.code))) return true;
  }
  return false;
}

/**
 * nodeTransport sends over node:http(s) with keep-alive agents of its own. Its costs per
 * try are one timer and the request: no AbortController, no AbortSignal.timeout.
 */
export function nodeTransport(base: URL): Transport {
  // Idle sockets close after 4 s, well before the service's idle timeout (120 s), so a
  // request rarely meets a socket the server is closing.
  const agents = {
    "http:": new http.Agent({ keepAlive: true, timeout: 4000, scheduling: "lifo" }),
    "https:": new https.Agent({ keepAlive: true, timeout: 4000, scheduling: "lifo" }),
  };
  const mod = base.protocol === "https:" ? https : http;
  const agent = agents[base.protocol as "http:" | "https:"];
  const hostname = base.hostname.startsWith("[") ? base.hostname.slice(1, -1) : base.hostname;
  const port = base.port;
  return (r) =>
    new Promise<TransportAnswer>((resolve, reject) => {
      const headers: Record<string, string | number> = { ...r.headers };
      if (r.body !== undefined) headers["content-length"] = Buffer.byteLength(r.body);
      let settled = false;
      let connected = false;
      let status: number | undefined;
      const fail = (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        r.signal?.removeEventListener("abort", onAbort);
        req.destroy();
        if (r.signal?.aborted) return reject(r.signal.reason);
        if (err instanceof TransportFailure) return reject(err);
        const e = err as Error;
        reject(new TransportFailure(e?.message ?? String(err), connected || !notSent(err), err, status));
      };
      const req = mod.request(
        { protocol: base.protocol, hostname, port, path: r.path, method: r.method, headers, agent },
        (res) => {
          status = res.statusCode ?? 0;
          const chunks: Buffer[] = [];
          let n = 0;
          res.on("data", (b: Buffer) => {
            n += b.length;
            if (n > r.maxBytes) {
              fail(new TransportFailure(`the answer's body exceeds ${r.maxBytes} bytes`, true, undefined, status));
              return;
            }
            chunks.push(b);
          });
          res.on("error", fail);
          res.on("aborted", () => fail(new TransportFailure("the answer was cut off", true, undefined, status)));
          res.on("end", () => {
            if (settled) return;
            if (!res.complete) return fail(new TransportFailure("the answer was cut off", true, undefined, status));
            settled = true;
            clearTimeout(timer);
            r.signal?.removeEventListener("abort", onAbort);
            const h = res.headers;
            resolve({
              status: status!,
              statusText: res.statusMessage ?? "",
              header: (name) => {
                const v = h[name];
                return Array.isArray(v) ? v.join(", ") : v;
              },
              text: chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"),
            });
          });
        },
      );
      req.on("socket", (s) => {
        if (!s.connecting) connected = true;
        else s.once("connect", () => (connected = true));
      });
      req.on("error", fail);
      const timer = setTimeout(
        () => fail(new TransportFailure(`no whole answer within ${r.timeoutMs}ms`, true, undefined, status)),
        r.timeoutMs,
      );
      const onAbort = () => fail(r.signal!.reason);
      if (r.signal) {
        if (r.signal.aborted) return fail(r.signal.reason);
        r.signal.addEventListener("abort", onAbort, { once: true });
      }
      req.end(r.body);
    });
}

/**
 * fetchTransport sends through a caller's fetch, with redirects left as answers and the
 * body read as a stream up to maxBytes.
 */
export function fetchTransport(f: typeof fetch, base: URL): Transport {
  const origin = base.origin;
  return async (r) => {
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, r.timeoutMs);
    const onAbort = () => ac.abort(r.signal!.reason);
    if (r.signal?.aborted) onAbort();
    else r.signal?.addEventListener("abort", onAbort, { once: true });
    let status: number | undefined;
    try {
      const res = await f(origin + r.path, { method: r.method, headers: r.headers, body: r.body, signal: ac.signal, redirect: "manual" });
      status = res.status;
      const chunks: Uint8Array[] = [];
      let n = 0;
      if (res.body) {
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          n += value.byteLength;
          if (n > r.maxBytes) {
            await reader.cancel().catch(() => undefined);
            throw new TransportFailure(`the answer's body exceeds ${r.maxBytes} bytes`, true, undefined, status);
          }
          chunks.push(value);
        }
      }
      return {
        status: res.status,
        statusText: res.statusText,
        header: (name) => res.headers.get(name) ?? undefined,
        text: Buffer.concat(chunks).toString("utf8"),
      };
    } catch (err) {
      if (r.signal?.aborted) throw r.signal.reason;
      if (err instanceof TransportFailure) throw err;
      if (timedOut) throw new TransportFailure(`no whole answer within ${r.timeoutMs}ms`, true, err, status);
      throw new TransportFailure((err as Error)?.message ?? String(err), status !== undefined || !notSent(err), err, status);
    } finally {
      clearTimeout(timer);
      r.signal?.removeEventListener("abort", onAbort);
    }
  };
}
