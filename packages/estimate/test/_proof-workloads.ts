/**
 * Workloads for the estimator's proof that look nothing like pgbench: written as an application
 * would (foreign-key chains, multi-row VALUES, RETURNING, JSONB, a view, a PL/pgSQL function, a
 * trigger, a procedure, ON DELETE CASCADE, a partitioned table, prepared statements), each a
 * pgbench script so its load is reproducible transaction for transaction.
 */
import type { AuditConfig } from "@auditpipe/estimate";

/** The application's schema, created once next to pgbench's tables. */
export const APP_SCHEMA = `
CREATE TABLE customers (id int PRIMARY KEY, email text NOT NULL, profile jsonb NOT NULL DEFAULT '{}');
CREATE TABLE products (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2) NOT NULL, attrs jsonb);
CREATE TABLE orders (
  id bigserial PRIMARY KEY,
  customer_id int NOT NULL REFERENCES customers (id),
  status text NOT NULL DEFAULT 'new',
  total numeric(12,2) NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX ON orders (customer_id);
CREATE TABLE order_items (
  order_id bigint NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
  line int NOT NULL,
  product_id int NOT NULL REFERENCES products (id),
  qty int NOT NULL,
  price numeric(10,2) NOT NULL,
  PRIMARY KEY (order_id, line));
CREATE TABLE order_events (
  id bigserial PRIMARY KEY,
  order_id bigint NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
  status text NOT NULL,
  at timestamptz NOT NULL DEFAULT now());
CREATE VIEW customer_orders AS
  SELECT c.id AS customer_id, c.email, o.id AS order_id, o.status, o.total
    FROM customers c JOIN orders o ON o.customer_id = c.id;
CREATE FUNCTION order_status_changed() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO order_events (order_id, status) VALUES (NEW.id, NEW.status);
  RETURN NEW;
END $f$;
CREATE TRIGGER order_status AFTER UPDATE OF status ON orders
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION order_status_changed();
CREATE FUNCTION place_order(customer int, product int, quantity int) RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE
  new_id bigint;
BEGIN
  INSERT INTO orders (customer_id) VALUES (customer) RETURNING id INTO new_id;
  INSERT INTO order_items (order_id, line, product_id, qty, price)
    SELECT new_id, 1, p.id, quantity, p.price FROM products p WHERE p.id = product;
  UPDATE orders SET total = quantity * (SELECT price FROM products WHERE id = product) WHERE id = new_id;
  RETURN new_id;
END $f$;
CREATE TABLE carts (id bigserial PRIMARY KEY, customer_id int NOT NULL REFERENCES customers (id));
CREATE TABLE cart_items (
  cart_id bigint NOT NULL REFERENCES carts (id) ON DELETE CASCADE,
  product_id int NOT NULL REFERENCES products (id),
  qty int NOT NULL);
CREATE TABLE events (
  at timestamptz NOT NULL,
  customer_id int NOT NULL REFERENCES customers (id),
  kind text NOT NULL,
  payload jsonb NOT NULL) PARTITION BY RANGE (at);
CREATE TABLE events_2026q1 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2026-04-01');
CREATE TABLE events_2026q2 PARTITION OF events FOR VALUES FROM ('2026-04-01') TO ('2026-07-01');
CREATE TABLE events_2026q3 PARTITION OF events FOR VALUES FROM ('2026-07-01') TO ('2026-10-01');
CREATE TABLE events_2026q4 PARTITION OF events FOR VALUES FROM ('2026-10-01') TO ('2027-01-01');
CREATE INDEX ON events (customer_id);
CREATE PROCEDURE checkout(cart bigint) LANGUAGE plpgsql AS $f$
BEGIN
  UPDATE carts SET customer_id = customer_id WHERE id = cart;
  DELETE FROM carts WHERE id = cart;
END $f$;
INSERT INTO customers SELECT g, 'customer' || g || '@example.org', jsonb_build_object('tier', g % 3)
  FROM generate_series(1, 1000) g;
INSERT INTO products SELECT g, 'product ' || g, 1 + g % 50, jsonb_build_object('color', 'red')
  FROM generate_series(1, 500) g;

`;

export interface ProofWorkload {
  name: string;
  /** pgbench arguments after the connection; SCRIPT stands for the script file. */
  args: string[];
  /** The pgbench script, when not built in. */
  script?: string;
  txnsPerClient: number;
  /**
   * For a script of autocommitted statements (several transactions per run): the text its first
   * statement starts with, whose calls count the runs. Default: one transaction per run.
   */
  firstStatement?: string;
  /** Object auditing on two of its tables. */
  objectConfig: AuditConfig;
  /** The column the recommender treats as sensitive. */
  sensitive: string;
}

const objectOn = (a: string, b: string, role: string): AuditConfig => ({
  name: `object: ${a.split(".")[1]}, ${b.split(".")[1]}`,
  log: ["none"],
  role,
  grants: [a, b].map((relation) => ({
    relation,
    privileges: ["SELECT", "INSERT", "UPDATE", "DELETE"],
  })),
});

export function appWorkloads(role: string): ProofWorkload[] {
  return [
    {
      name: "orders (FK chain, multi-row VALUES, RETURNING, JSONB, prepared)",
      args: ["-M", "prepared", "-f", "SCRIPT"],
      script: `\\set c random(1, 1000)
\\set p1 random(1, 500)
\\set p2 random(1, 500)
BEGIN;
SELECT id, email, profile->>'tier' AS tier FROM customers WHERE id = :c;
INSERT INTO orders (customer_id, status) VALUES (:c, 'new') RETURNING id AS order_id \\gset
INSERT INTO order_items (order_id, line, product_id, qty, price) VALUES (:order_id, 1, :p1, 1, 9.90), (:order_id, 2, :p2, 2, 4.50);
UPDATE orders SET total = (SELECT sum(qty * price) FROM order_items WHERE order_id = :order_id) WHERE id = :order_id;
UPDATE customers SET profile = jsonb_set(profile, '{last_order}', to_jsonb(:order_id::bigint)) WHERE id = :c;
COMMIT;
`,
      txnsPerClient: 100,
      objectConfig: objectOn("public.orders", "public.customers", role),
      sensitive: "customers.email",
    },
    {
      name: "shop (function, trigger, view)",
      args: ["-f", "SCRIPT"],
      script: `\\set c random(1, 1000)
\\set p random(1, 500)
\\set q random(1, 5)
SELECT place_order(:c, :p, :q);
SELECT email, order_id, status, total FROM customer_orders WHERE customer_id = :c ORDER BY order_id DESC LIMIT 3;
UPDATE orders SET status = 'paid' WHERE id = (SELECT max(id) FROM orders WHERE customer_id = :c) AND status = 'new';
`,
      txnsPerClient: 100,
      firstStatement: "SELECT place_order(",
      objectConfig: objectOn("public.orders", "public.order_events", role),
      sensitive: "customers.email",
    },
    {
      name: "events (partitioned, CALL, ON DELETE CASCADE)",
      args: ["-f", "SCRIPT"],
      script: `\\set c random(1, 1000)
\\set d random(0, 360)
\\set p1 random(1, 500)
\\set p2 random(1, 500)
BEGIN;
INSERT INTO events (at, customer_id, kind, payload) VALUES
  (timestamptz '2026-01-01' + :d * interval '1 day', :c, 'view', '{"page": "home", "ms": 120}'),
  (timestamptz '2026-01-01' + :d * interval '1 day', :c, 'click', '{"page": "home", "target": "buy"}');
SELECT kind, count(*) FROM events WHERE customer_id = :c GROUP BY kind;
INSERT INTO carts (customer_id) VALUES (:c) RETURNING id AS cart \\gset
INSERT INTO cart_items (cart_id, product_id, qty) VALUES (:cart, :p1, 1), (:cart, :p2, 3);
CALL checkout(:cart);
COMMIT;
`,
      txnsPerClient: 100,
      objectConfig: objectOn("public.carts", "public.events", role),
      sensitive: "customers.email",
    },
  ];
}
