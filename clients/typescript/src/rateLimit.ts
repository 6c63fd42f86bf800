// The `RateLimit` and `RateLimit-Policy` headers (IETF RateLimit draft, structured fields):
// what the service says of its budgets on every answer, errors included.

/** A header bag: a fetch `Headers`, or a plain object of names to values in any case. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

/** One member of a structured-field list: a token or a quoted string, then `;key=value` params. */
const MEMBER =
  /\s*(?:"((?:[^"\\]|\\.)*)"|([A-Za-z*][A-Za-z0-9_\-.:%*/]*))((?:\s*;\s*[a-z*][a-z0-9_\-.*]*(?:=(?:"(?:[^"\\]|\\.)*"|[^;,\s]+))?)*)\s*(?:,|$)/y;
const PARAM = /;\s*([a-z*][a-z0-9_\-.*]*)(?:=("(?:[^"\\]|\\.)*"|[^;,\s]+))?/g;

/** `"requests";r=116;t=60, "writes";r=28;t=60` as {name: {param: value}}; what cannot be
 * read is left out (the headers are advice, never a reason to fail a call). */
function members(value: string): Map<string, Record<string, string>> {
  const found = new Map<string, Record<string, string>>();
  let position = 0;
  while (position < value.length) {
    MEMBER.lastIndex = position;
    const match = MEMBER.exec(value);
    if (match === null || MEMBER.lastIndex === position) break;
    const name = match[1] ?? match[2] ?? "";
    const params: Record<string, string> = {};
    for (const p of (match[3] ?? "").matchAll(PARAM)) {
      params[p[1]!] = (p[2] ?? "?1").replace(/^"+|"+$/g, "");
    }
    found.set(name, params);
    position = MEMBER.lastIndex;
  }
  return found;
}

function int(text: string | undefined): number | null {
  if (text === undefined || !/^\s*[+-]?\d+\s*$/.test(text)) return null;
  return Number.parseInt(text, 10);
}

/** A header's value from either kind of bag, names in any case. */
export function headerOf(headers: HeaderSource, name: string): string | undefined {
  const wanted = name.toLowerCase();
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).forEach === "function") {
    return (headers as Headers).get(wanted) ?? undefined;
  }
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === wanted && value !== undefined) {
      return Array.isArray(value) ? value.join(", ") : String(value);
    }
  }
  return undefined;
}

/** One budget: `quota` requests per `window` seconds (RateLimit-Policy), `remaining`
 * and `reset` seconds (RateLimit), each null when the answer did not say it. */
export interface Budget {
  readonly name: string;
  readonly quota: number | null;
  readonly window: number | null;
  readonly remaining: number | null;
  readonly reset: number | null;
}

/** The budgets one answer told of, by name (`requests`, `writes`, ...). `remaining` and
 * `reset` are those of the budget nearest to running out. */
export class RateLimit {
  readonly budgets: Readonly<Record<string, Budget>>;

  constructor(budgets: Record<string, Budget> = {}) {
    this.budgets = Object.freeze({ ...budgets });
  }

  /** The fewest requests left in any budget; null when no budget said. */
  get remaining(): number | null {
    const known = Object.values(this.budgets)
      .map((b) => b.remaining)
      .filter((r): r is number => r !== null);
    return known.length ? Math.min(...known) : null;
  }

  /** Seconds until the budget nearest to running out refills. */
  get reset(): number | null {
    const nearest = Object.values(this.budgets).filter((b) => b.remaining !== null);
    if (!nearest.length) return null;
    nearest.sort((a, b) => a.remaining! - b.remaining! || (b.reset ?? 0) - (a.reset ?? 0));
    return nearest[0]!.reset;
  }

  /** Reads `RateLimit-Policy` and `RateLimit` of an answer's headers. */
  static fromHeaders(headers: HeaderSource): RateLimit {
    const policies = members(headerOf(headers, "ratelimit-policy") ?? "");
    const states = members(headerOf(headers, "ratelimit") ?? "");
    const budgets: Record<string, Budget> = {};
    const names = [...policies.keys(), ...[...states.keys()].filter((n) => !policies.has(n))];
    for (const name of names) {
      const policy = policies.get(name) ?? {};
      const state = states.get(name) ?? {};
      budgets[name] = Object.freeze({
        name,
        quota: int(policy["q"]),
        window: int(policy["w"]),
        remaining: int(state["r"]),
        reset: int(state["t"]),
      });
    }
    return new RateLimit(budgets);
  }

  toJSON(): { budgets: Record<string, Budget>; remaining: number | null; reset: number | null } {
    return { budgets: { ...this.budgets }, remaining: this.remaining, reset: this.reset };
  }
}
