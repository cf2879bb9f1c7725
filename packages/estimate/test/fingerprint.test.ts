import { fingerprint } from "@auditpipe/estimate";
import { describe, expect, it } from "vitest";

describe("fingerprint", () => {
  it("statements differing only in values share a fingerprint, which holds no value", () => {
    const a = fingerprint("SELECT email FROM customers WHERE id = 42 AND name = 'Ada Lovelace'");
    const b = fingerprint("select  email from customers\n where id = $1 and name = E'Grace\\'s' -- note");
    expect(a).toBe(b);
    expect(a).toBe("select email from customers where id = ? and name = ?");
    expect(a).not.toMatch(/Ada|42/);
  });

  it("folds value lists whatever their length", () => {
    expect(fingerprint("SELECT 1 FROM t WHERE id IN (1, 2, 3)")).toBe(
      fingerprint("SELECT 1 FROM t WHERE id IN (7, 8)"),
    );
    expect(fingerprint("INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y'), (3, 'z')")).toBe(
      fingerprint("INSERT INTO t (a, b) VALUES (9, 'q')"),
    );
  });

  it("a unary minus before a constant is part of the constant; a binary one is not", () => {
    // pgbench's TPC-B with a negative :delta: one statement, not two.
    expect(fingerprint("UPDATE pgbench_accounts SET abalance = abalance + -4213 WHERE aid = 7")).toBe(
      fingerprint("UPDATE pgbench_accounts SET abalance = abalance + 4213 WHERE aid = 7"),
    );
    expect(
      fingerprint(
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 7, -4213, CURRENT_TIMESTAMP)",
      ),
    ).toBe(
      fingerprint(
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 7, 4213, CURRENT_TIMESTAMP)",
      ),
    );
    expect(fingerprint("SELECT -1")).toBe("select ?");
    expect(fingerprint("SELECT * FROM t WHERE a = - $1 AND b BETWEEN -2 AND -3")).toBe(
      "select * from t where a = ? and b between ? and ?",
    );
    expect(fingerprint("SELECT balance - 5, (x) - 1, t.n -2 FROM t")).toBe(
      "select balance - ?, (x) - ?, t.n - ? from t",
    );
  });

  it("keeps quoted identifiers as written and cuts long statements", () => {
    expect(fingerprint('SELECT * FROM "Weird, Schema"."Tab""le"')).toBe(
      'select * from "Weird, Schema"."Tab""le"',
    );
    const long = fingerprint(`SELECT ${Array.from({ length: 100 }, (_, i) => `c${i}`).join(", ")} FROM t`);
    expect(long.length).toBe(160);
    expect(long.endsWith("…")).toBe(true);
  });
});
