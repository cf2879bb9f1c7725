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
CREATE TABLE ledger_accounts (
  id int PRIMARY KEY,
  owner_email text NOT NULL,
  iban text NOT NULL,
  balance numeric(14,2) NOT NULL DEFAULT 0);
CREATE TABLE ledger_batches (
  id bigserial PRIMARY KEY,
  opened_at timestamptz NOT NULL DEFAULT now(),
  status text NOT NULL DEFAULT 'open',
  total numeric(14,2));
CREATE TABLE ledger_holds (
  id bigserial PRIMARY KEY,
  account_id int NOT NULL REFERENCES ledger_accounts (id),
  amount numeric(14,2) NOT NULL);
CREATE TABLE ledger_entries (
  id bigserial PRIMARY KEY,
  batch_id bigint NOT NULL REFERENCES ledger_batches (id),
  account_id int NOT NULL REFERENCES ledger_accounts (id),
  hold_id bigint REFERENCES ledger_holds (id),
  amount numeric(14,2) NOT NULL,
  memo text,
  posted boolean NOT NULL DEFAULT false);
CREATE INDEX ON ledger_entries (batch_id);
CREATE INDEX ON ledger_entries (hold_id);
CREATE TABLE warehouses (code text PRIMARY KEY, region text NOT NULL, manager_email text);
CREATE TABLE stock (
  warehouse text NOT NULL REFERENCES warehouses (code) ON UPDATE CASCADE,
  product_id int NOT NULL REFERENCES products (id),
  qty int NOT NULL DEFAULT 0,
  PRIMARY KEY (warehouse, product_id));
CREATE TABLE stock_moves (
  id bigserial PRIMARY KEY,
  warehouse text NOT NULL,
  product_id int NOT NULL,
  delta int NOT NULL,
  FOREIGN KEY (warehouse, product_id) REFERENCES stock (warehouse, product_id) DEFERRABLE INITIALLY DEFERRED);
CREATE INDEX ON stock_moves (warehouse, id);
CREATE TABLE stock_archive (LIKE stock_moves);
INSERT INTO warehouses SELECT 'w' || g, 'r' || (g % 3), 'manager' || g || '@example.org' FROM generate_series(1, 20) g;
CREATE TABLE queues (name text PRIMARY KEY, paused boolean NOT NULL DEFAULT false);
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue text NOT NULL REFERENCES queues (name) ON UPDATE CASCADE,
  parent_id bigint REFERENCES jobs (id) ON DELETE SET NULL,
  payload jsonb NOT NULL,
  state text NOT NULL DEFAULT 'ready',
  attempts int NOT NULL DEFAULT 0,
  locked_by text,
  tags text[] NOT NULL DEFAULT '{}');
CREATE INDEX ON jobs (queue, state, id);
CREATE INDEX ON jobs (parent_id);
CREATE TABLE job_log (job_id bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE, at timestamptz NOT NULL DEFAULT now(), msg text);
CREATE INDEX ON job_log (job_id);
CREATE SCHEMA crm;
CREATE TABLE crm.tenants (id int PRIMARY KEY, name text NOT NULL, plan text NOT NULL DEFAULT 'free');
CREATE FUNCTION crm.valid_email(text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN RETURN position('@' in $1) > 1; END $f$;
CREATE TABLE crm."Contacts" (
  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  tenant_id int NOT NULL REFERENCES crm.tenants (id),
  email text NOT NULL CHECK (crm.valid_email(email)),
  full_name text,
  updated_at timestamptz);
CREATE FUNCTION crm.touch() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN NEW.updated_at := now(); RETURN NEW; END $f$;
CREATE TRIGGER contacts_touch BEFORE INSERT OR UPDATE ON crm."Contacts" FOR EACH ROW EXECUTE FUNCTION crm.touch();
CREATE TABLE crm.notes (
  id bigserial PRIMARY KEY,
  contact_id bigint NOT NULL REFERENCES crm."Contacts" (id) ON DELETE CASCADE,
  body text NOT NULL);
CREATE INDEX ON crm.notes (contact_id);
CREATE INDEX ON crm."Contacts" (tenant_id);
CREATE SEQUENCE crm.ticket_no;
CREATE FUNCTION crm.display_name(name text, email text) RETURNS text LANGUAGE sql VOLATILE AS $f$ SELECT coalesce(name, email) $f$;
INSERT INTO crm.tenants SELECT g, 'tenant ' || g, CASE WHEN g % 5 = 0 THEN 'pro' ELSE 'free' END FROM generate_series(1, 50) g;
INSERT INTO crm."Contacts" (tenant_id, email, full_name) SELECT 1 + g % 50, 'c' || g || '@example.org', 'Name ' || g FROM generate_series(1, 5000) g;
CREATE TABLE categories (
  id bigserial PRIMARY KEY,
  parent_id bigint REFERENCES categories (id) ON DELETE CASCADE,
  name text NOT NULL);
CREATE TABLE listings (shop_id int, sku text, price numeric(10,2) NOT NULL, PRIMARY KEY (shop_id, sku));
CREATE TABLE items (
  id bigserial PRIMARY KEY,
  category_id bigint REFERENCES categories (id) ON UPDATE CASCADE ON DELETE SET NULL,
  shop_id int NOT NULL,
  sku text NOT NULL,
  name text NOT NULL,
  FOREIGN KEY (shop_id, sku) REFERENCES listings (shop_id, sku) ON DELETE CASCADE);
CREATE INDEX ON categories (parent_id);
CREATE INDEX ON items (category_id);
CREATE INDEX ON items (shop_id, sku);
INSERT INTO listings SELECT s, 'sku' || k, 1 + k FROM generate_series(1, 20) s, generate_series(1, 50) k;
CREATE SEQUENCE region_codes;
CREATE TABLE regions (code text PRIMARY KEY, name text);
CREATE TABLE stores (
  id bigserial PRIMARY KEY,
  region_code text NOT NULL REFERENCES regions (code) ON UPDATE CASCADE ON DELETE RESTRICT);
CREATE TABLE staff (
  id bigserial PRIMARY KEY,
  store_id bigint NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
  manager_id bigint REFERENCES staff (id) ON DELETE SET NULL,
  name text NOT NULL);
CREATE TABLE shifts (
  id bigserial PRIMARY KEY,
  staff_id bigint NOT NULL REFERENCES staff (id) ON DELETE CASCADE,
  store_id bigint NOT NULL REFERENCES stores (id),
  day date NOT NULL);
CREATE TABLE shift_notes (shift_id bigint NOT NULL REFERENCES shifts (id) ON DELETE CASCADE, body text NOT NULL);
CREATE INDEX ON stores (region_code);
CREATE INDEX ON staff (store_id);
CREATE INDEX ON staff (manager_id);
CREATE INDEX ON shifts (staff_id);
CREATE INDEX ON shifts (store_id);
CREATE INDEX ON shift_notes (shift_id);
INSERT INTO queues VALUES ('q1'), ('q2'), ('q3');
CREATE SCHEMA vault;
CREATE TABLE vault.accounts (id int PRIMARY KEY, holder text NOT NULL, balance numeric(14,2) NOT NULL DEFAULT 0);
CREATE TABLE vault.transfers (
  id bigserial PRIMARY KEY,
  src int NOT NULL REFERENCES vault.accounts (id),
  dst int NOT NULL REFERENCES vault.accounts (id),
  amount numeric(14,2) NOT NULL,
  at timestamptz NOT NULL DEFAULT now());
CREATE INDEX ON vault.transfers (src);
CREATE INDEX ON vault.transfers (dst);
CREATE TABLE vault.history (account_id int NOT NULL, old_balance numeric(14,2), new_balance numeric(14,2), by_user text NOT NULL DEFAULT session_user);
CREATE FUNCTION vault.keep_history() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $f$
BEGIN
  INSERT INTO vault.history (account_id, old_balance, new_balance) VALUES (NEW.id, OLD.balance, NEW.balance);
  RETURN NEW;
END $f$;
CREATE TRIGGER balance_history AFTER UPDATE OF balance ON vault.accounts FOR EACH ROW EXECUTE FUNCTION vault.keep_history();
CREATE FUNCTION vault.transfer(a int, b int, amt numeric) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = vault, pg_temp AS $f$
DECLARE
  t bigint;
BEGIN
  UPDATE accounts SET balance = balance - amt WHERE id = a;
  UPDATE accounts SET balance = balance + amt WHERE id = b;
  INSERT INTO transfers (src, dst, amount) VALUES (a, b, amt) RETURNING id INTO t;
  PERFORM pg_notify('transfers', t::text);
  RETURN t;
END $f$;
CREATE FUNCTION vault.balance_of(a int) RETURNS numeric LANGUAGE sql STABLE AS $f$ SELECT balance FROM vault.accounts WHERE id = a $f$;
INSERT INTO vault.accounts SELECT g, 'holder ' || g, 1000 FROM generate_series(1, 1000) g;
CREATE TABLE docs (id bigserial PRIMARY KEY, owner int NOT NULL, body jsonb NOT NULL, note text);
CREATE TABLE batch_lines (batch int NOT NULL, label text NOT NULL, qty int NOT NULL, price numeric(10,2));
INSERT INTO batch_lines SELECT 10000 + g / 60, 'label ' || 1 + g % 60 || ' of ' || 10000 + g / 60, 1 + g % 60, 1.5 + g % 60 FROM generate_series(1, 300000) g;
-- One parallel worker for every scan however the table grows (the size threshold is skipped).
ALTER TABLE batch_lines SET (parallel_workers = 1);
CREATE INDEX ON docs (owner);
INSERT INTO jobs (queue, payload) SELECT 'q' || (1 + g % 3), '{}' FROM generate_series(1, 30000) g;
INSERT INTO ledger_accounts SELECT g, 'owner' || g || '@example.org', 'DE' || lpad(g::text, 20, '0'), 1000
  FROM generate_series(1, 1000) g;
INSERT INTO customers SELECT g, 'customer' || g || '@example.org', jsonb_build_object('tier', g % 3)
  FROM generate_series(1, 1000) g;
INSERT INTO products SELECT g, 'product ' || g, 1 + g % 50, jsonb_build_object('color', 'red')
  FROM generate_series(1, 500) g;
INSERT INTO stock SELECT 'w' || w, p, 100 FROM generate_series(1, 20) w, generate_series(1, 500) p;

`;

export interface ProofWorkload {
  name: string;
  /** pgbench arguments after the connection; SCRIPT stands for the script file. */
  args: string[];
  /** The pgbench script, when not built in. */
  script?: string;
  txnsPerClient: number;
  /**
   * The text of a statement its script runs once per run, whose calls (pg_stat_statements, exact)
   * count the runs in the sample: bytes per run are bytes per transaction for a script that is one
   * transaction. (pg_stat_database's transaction count also holds the sampler's own and, flushed up
   * to a second late, those of sessions that ran just before the sample.)
   */
  runStatement: string;
  /** Object auditing on two of its tables, and other grants (column-level, referenced tables). */
  objectConfigs: AuditConfig[];
  /**
   * The functions, procedures and triggers it runs: the modelled estimate (nested statements not
   * counted) cannot see their statements and must name these instead.
   */
  unseen?: string[];
  /** The column the recommender treats as sensitive. */
  sensitive: string;
  /**
   * The role pgbench connects as, when not the superuser: APP_ROLE owns nothing, so pgaudit does
   * not log the foreign-key checks and actions its statements fire (they run as the owner).
   */
  user?: typeof APP_ROLE;
}

/** An application role that owns no table (granted what the workloads need: APP_ROLE_GRANTS). */
export const APP_ROLE = "app";
export const APP_ROLE_GRANTS = `CREATE ROLE ${APP_ROLE} LOGIN;
GRANT USAGE ON SCHEMA crm, vault TO ${APP_ROLE};
GRANT ALL ON ALL TABLES IN SCHEMA public, crm TO ${APP_ROLE};
GRANT SELECT, UPDATE ON vault.accounts TO ${APP_ROLE};
GRANT SELECT ON vault.transfers TO ${APP_ROLE};
GRANT ALL ON ALL SEQUENCES IN SCHEMA public, crm TO ${APP_ROLE};
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public, crm, vault TO ${APP_ROLE};
GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA public, crm TO ${APP_ROLE};`;

/** Object auditing through `role` with the given grants (column-level where columns are named). */
export const objectGrants = (
  name: string,
  role: string,
  grants: NonNullable<AuditConfig["grants"]>,
): AuditConfig => ({
  name: `object: ${name}`,
  log: ["none"],
  role,
  grants,
});

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
      name: "orders (FK chain, multi-row VALUES, RETURNING, JSONB, prepared), as a role that owns nothing",
      user: APP_ROLE,
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
      runStatement: "SELECT id, email",
      objectConfigs: [
        objectOn("public.orders", "public.customers", role),
        // The shape of issue 20's report: a column-level SELECT on the referenced table.
        objectGrants("SELECT (email) on customers, INSERT, UPDATE on orders", role, [
          { relation: "public.customers", privileges: ["SELECT"], columns: ["email"] },
          { relation: "public.orders", privileges: ["INSERT", "UPDATE"] },
        ]),
      ],
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
      runStatement: "SELECT place_order(",
      objectConfigs: [objectOn("public.orders", "public.order_events", role)],
      unseen: ["public.place_order()", "trigger order_status on public.orders"],
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
      runStatement: "INSERT INTO events",
      objectConfigs: [objectOn("public.carts", "public.events", role)],
      unseen: ["public.checkout()"],
      sensitive: "customers.email",
    },
    {
      name: "ledger (FOR UPDATE, RETURNING, NULL keys, same-transaction updates, NO ACTION delete)",
      args: ["-f", "SCRIPT"],
      // Both accounts locked first, in id order: no two transfers deadlock.
      script: `\\set a random(1, 1000)
\\set b 1 + (:a + random(0, 998)) % 1000
\\set lo least(:a, :b)
\\set hi greatest(:a, :b)
\\set cents random(1, 50000)
BEGIN;
SELECT id, balance FROM ledger_accounts WHERE id IN (:lo, :hi) ORDER BY id FOR UPDATE;
INSERT INTO ledger_holds (account_id, amount) VALUES (:a, :cents / 100.0) RETURNING id AS hold \\gset
INSERT INTO ledger_batches DEFAULT VALUES RETURNING id AS batch \\gset
INSERT INTO ledger_entries (batch_id, account_id, amount, memo) VALUES
  (:batch, :a, -:cents / 100.0, 'transfer out'), (:batch, :b, :cents / 100.0, 'transfer in');
UPDATE ledger_accounts SET balance = balance - :cents / 100.0 WHERE id = :a;
UPDATE ledger_accounts SET balance = balance + :cents / 100.0 WHERE id = :b;
UPDATE ledger_entries SET posted = true WHERE batch_id = :batch;
UPDATE ledger_batches SET status = 'posted', total = :cents / 100.0 WHERE id = :batch;
DELETE FROM ledger_holds WHERE id = :hold;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "INSERT INTO ledger_holds",
      objectConfigs: [
        objectGrants("SELECT (owner_email) on accounts, INSERT, UPDATE on entries", role, [
          { relation: "public.ledger_accounts", privileges: ["SELECT"], columns: ["owner_email"] },
          { relation: "public.ledger_entries", privileges: ["INSERT", "UPDATE"] },
        ]),
        objectGrants("SELECT on batches, UPDATE on holds (referenced tables)", role, [
          { relation: "public.ledger_batches", privileges: ["SELECT"] },
          { relation: "public.ledger_holds", privileges: ["UPDATE"] },
        ]),
      ],
      sensitive: "ledger_accounts.owner_email",
    },
    {
      // Every statement touches the same rows each time (no branch a random value decides): the
      // sample's thousands of transactions and the measured 400 write the same entries.
      name: "stock (upsert, MERGE, data-modifying CTE, UPDATE FROM, composite and deferred keys, savepoints)",
      args: ["-f", "SCRIPT"],
      script: `\\set w random(1, 20)
\\set p random(1, 500)
\\set d random(-3, 3)
BEGIN;
SET LOCAL work_mem = '8MB';
INSERT INTO stock (warehouse, product_id, qty) VALUES ('w' || :w, :p, :d)
  ON CONFLICT (warehouse, product_id) DO UPDATE SET qty = stock.qty + EXCLUDED.qty;
INSERT INTO stock_moves (warehouse, product_id, delta) VALUES ('w' || :w, :p, :d);
SAVEPOINT adjust;
MERGE INTO stock s USING (SELECT 'w' || :w AS warehouse, :p AS product_id, 1 AS delta) m
  ON s.warehouse = m.warehouse AND s.product_id = m.product_id
  WHEN MATCHED THEN UPDATE SET qty = s.qty + m.delta
  WHEN NOT MATCHED THEN INSERT (warehouse, product_id, qty) VALUES (m.warehouse, m.product_id, m.delta);
RELEASE SAVEPOINT adjust;
WITH moved AS (DELETE FROM stock_moves WHERE id IN (SELECT id FROM stock_moves WHERE warehouse = 'w' || :w ORDER BY id LIMIT 1) RETURNING *)
  INSERT INTO stock_archive SELECT * FROM moved;
UPDATE stock s SET qty = s.qty - 1 FROM warehouses h
  WHERE h.code = s.warehouse AND h.region <> '' AND s.product_id = :p AND s.warehouse = 'w' || :w;
SELECT h.region, sum(s.qty) FROM stock s JOIN warehouses h ON h.code = s.warehouse WHERE s.product_id = :p GROUP BY h.region;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "INSERT INTO stock_moves",
      objectConfigs: [
        objectOn("public.stock", "public.stock_moves", role),
        objectGrants("SELECT (manager_email) on warehouses, INSERT on stock_archive", role, [
          { relation: "public.warehouses", privileges: ["SELECT"], columns: ["manager_email"] },
          { relation: "public.stock_archive", privileges: ["INSERT"] },
        ]),
      ],
      sensitive: "warehouses.manager_email",
    },
    {
      name: "jobs (queue: identity, self-reference, SKIP LOCKED in a CTE, cascades, NOTIFY, extended protocol)",
      args: ["-M", "extended", "-f", "SCRIPT"],
      // Each queue's jobs taken under its advisory lock: no two clients pick the same job. The
      // 30,000 seeded jobs outlast the test's transactions, so every job taken is one without
      // children (a parent's ON DELETE SET NULL would make the entries per transaction vary).
      script: `\\set q random(1, 3)
BEGIN;
SELECT pg_advisory_xact_lock(:q);
INSERT INTO jobs (queue, payload, tags) VALUES ('q' || :q, '{"k": 1}', ARRAY['a', 'b']) RETURNING id AS new_id \\gset
INSERT INTO jobs (queue, parent_id, payload) VALUES ('q' || :q, :new_id, '{}');
WITH next AS (SELECT id FROM jobs WHERE queue = 'q' || :q AND state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
  UPDATE jobs j SET state = 'running', attempts = j.attempts + 1, locked_by = 'w1' FROM next WHERE j.id = next.id RETURNING j.id AS job_id \\gset
INSERT INTO job_log (job_id, msg) VALUES (:job_id, 'started');
DELETE FROM jobs WHERE id = :job_id RETURNING id;
NOTIFY jobs_done;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "SELECT pg_advisory_xact_lock",
      objectConfigs: [
        objectOn("public.jobs", "public.job_log", role),
        objectGrants("SELECT (payload) on jobs, UPDATE on queues", role, [
          { relation: "public.jobs", privileges: ["SELECT"], columns: ["payload"] },
          { relation: "public.queues", privileges: ["UPDATE"] },
        ]),
      ],
      sensitive: "jobs.payload",
    },
    {
      name: "crm (schema, quoted name, CHECK function, BEFORE trigger, sequence, IN list, INSERT SELECT), as a role that owns nothing",
      user: APP_ROLE,
      args: ["-f", "SCRIPT"],
      script: `\\set t random(1, 50)
\\set k random(1, 1000000)
BEGIN;
SET LOCAL search_path = crm, public;
SELECT set_config('app.tenant', :t::text, true);
SELECT name, plan FROM tenants WHERE id = :t;
INSERT INTO "Contacts" (tenant_id, email, full_name) VALUES (:t, 'n' || :k || '@example.org', 'New ' || :k) RETURNING id AS cid \\gset
INSERT INTO notes (contact_id, body) SELECT :cid, 'welcome to ' || name FROM tenants WHERE id = :t;
UPDATE "Contacts" SET full_name = upper(full_name) WHERE id = :cid;
SELECT nextval('crm.ticket_no') AS ticket \\gset
SELECT crm.display_name(c.full_name, c.email), count(n.id) FROM crm."Contacts" c LEFT JOIN crm.notes n ON n.contact_id = c.id
  WHERE c.tenant_id = :t AND c.id IN (:cid, :cid - 1, :cid - 2) GROUP BY c.full_name, c.email;
DELETE FROM "Contacts" WHERE id = :cid;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "SELECT name, plan FROM tenants",
      objectConfigs: [
        objectOn('crm."Contacts"', "crm.notes", role),
        objectGrants("SELECT (plan) on tenants, INSERT on notes", role, [
          { relation: "crm.tenants", privileges: ["SELECT"], columns: ["plan"] },
          { relation: "crm.notes", privileges: ["INSERT"] },
        ]),
      ],
      sensitive: "Contacts.email",
    },
    {
      // Foreign keys only (no function, no trigger): the modelled estimate must hold too.
      name: "tree (self-referencing cascade, SET NULL, same-transaction re-checks, composite key), as a role that owns nothing",
      user: APP_ROLE,
      args: ["-f", "SCRIPT"],
      script: `\\set s random(1, 20)
\\set k random(1, 50)
BEGIN;
INSERT INTO categories (name) VALUES ('root') RETURNING id AS root \\gset
INSERT INTO categories (parent_id, name) VALUES (:root, 'leaf') RETURNING id AS leaf \\gset
INSERT INTO items (category_id, shop_id, sku, name) VALUES (:leaf, :s, 'sku' || :k, 'a'), (:leaf, :s, 'sku' || :k, 'b');
UPDATE items SET name = upper(name) WHERE category_id = :leaf;
SELECT i.name, l.price FROM items i JOIN listings l ON l.shop_id = i.shop_id AND l.sku = i.sku WHERE i.category_id = :leaf;
DELETE FROM categories WHERE id = :root;
SELECT count(*) FROM items WHERE category_id IS NULL AND shop_id = :s;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "SELECT i.name, l.price",
      objectConfigs: [
        objectOn("public.items", "public.categories", role),
        objectGrants("SELECT (price) on listings, UPDATE on items", role, [
          { relation: "public.listings", privileges: ["SELECT"], columns: ["price"] },
          { relation: "public.items", privileges: ["UPDATE"] },
        ]),
      ],
      sensitive: "listings.price",
    },
    {
      name: "stores (ON UPDATE CASCADE, RESTRICT, a cascade three tables deep, self-reference SET NULL), as a role that owns nothing",
      user: APP_ROLE,
      args: ["-f", "SCRIPT"],
      script: `BEGIN;
SELECT nextval('region_codes') AS rn \\gset
INSERT INTO regions (code, name) VALUES ('r' || :rn, 'north');
INSERT INTO stores (region_code) VALUES ('r' || :rn) RETURNING id AS store \\gset
INSERT INTO staff (store_id, name) VALUES (:store, 'boss') RETURNING id AS boss \\gset
INSERT INTO staff (store_id, manager_id, name) VALUES (:store, :boss, 'clerk') RETURNING id AS clerk \\gset
INSERT INTO shifts (staff_id, store_id, day) VALUES (:clerk, :store, date '2026-12-01'), (:clerk, :store, date '2026-12-02');
INSERT INTO shift_notes (shift_id, body) SELECT id, 'opening' FROM shifts WHERE staff_id = :clerk;
UPDATE regions SET code = code || 'x' WHERE code = 'r' || :rn;
SELECT s.id, r.name, count(f.id) FROM stores s JOIN regions r ON r.code = s.region_code LEFT JOIN shifts f ON f.store_id = s.id WHERE s.id = :store GROUP BY s.id, r.name;
DELETE FROM staff WHERE id = :clerk;
DELETE FROM stores WHERE id = :store;
DELETE FROM regions WHERE code = 'r' || :rn || 'x';
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "INSERT INTO stores",
      objectConfigs: [
        objectOn("public.staff", "public.shifts", role),
        objectGrants("SELECT (name) on regions, UPDATE on stores", role, [
          { relation: "public.regions", privileges: ["SELECT"], columns: ["name"] },
          { relation: "public.stores", privileges: ["UPDATE"] },
        ]),
      ],
      sensitive: "staff.name",
    },
    {
      // SECURITY DEFINER: a function and a trigger that run as the tables' owner, called by a role
      // that is not a member of it: pgaudit logs no statement of theirs that reads a table.
      name: "vault (SECURITY DEFINER function and trigger, SQL function, NOTIFY), as a role that owns nothing",
      user: APP_ROLE,
      args: ["-f", "SCRIPT"],
      script: `\\set a random(1, 500)
\\set b random(501, 1000)
BEGIN;
SELECT vault.transfer(:a, :b, 5);
SELECT vault.balance_of(:a);
UPDATE vault.accounts SET holder = holder WHERE id = :b;
UPDATE vault.accounts SET balance = balance + 1 WHERE id = :a;
SELECT t.amount, a.holder FROM vault.transfers t JOIN vault.accounts a ON a.id = t.dst WHERE t.src = :a ORDER BY t.id DESC LIMIT 3;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "SELECT vault.balance_of",
      objectConfigs: [
        objectOn("vault.accounts", "vault.transfers", role),
        objectGrants("SELECT (holder) on accounts, INSERT on history", role, [
          { relation: "vault.accounts", privileges: ["SELECT"], columns: ["holder"] },
          { relation: "vault.history", privileges: ["INSERT"] },
        ]),
      ],
      unseen: ["vault.transfer", "vault.balance_of", "vault.keep_history"],
      sensitive: "accounts.holder",
    },
    {
      name: "docs-simple (large JSON literals)",
      args: ["-f", "SCRIPT"],
      script: `\\set o random(1, 200)
SELECT '{"k": "' || repeat(md5(:o::text), 40) || '", "n": ' || :o || '}' AS body \\gset
BEGIN;
INSERT INTO docs (owner, body) VALUES (:o, ':body') RETURNING id AS d \\gset
UPDATE docs SET body = ':body', note = 'seen' WHERE id = :d;
SELECT id, body->>'n' FROM docs WHERE owner = :o ORDER BY id DESC LIMIT 2;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "INSERT INTO docs",
      objectConfigs: [objectOn("public.docs", "public.customers", role)],
      sensitive: "docs.body",
    },
    {
      name: "docs-extended (large JSON parameters)",
      args: ["-M", "extended", "-f", "SCRIPT"],
      script: `\\set o random(1, 200)
SELECT '{"k": "' || repeat(md5(:o::text), 40) || '", "n": ' || :o || '}' AS body \\gset
BEGIN;
INSERT INTO docs (owner, body) VALUES (:o, :body) RETURNING id AS d \\gset
UPDATE docs SET body = :body, note = 'seen' WHERE id = :d;
SELECT id, body->>'n' FROM docs WHERE owner = :o ORDER BY id DESC LIMIT 2;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "INSERT INTO docs",
      objectConfigs: [objectOn("public.docs", "public.customers", role)],
      sensitive: "docs.body",
    },
    {
      name: "etl (temp table ON COMMIT DROP, CREATE TEMP TABLE AS, DO block, LOCK TABLE, TRUNCATE of a temp table)",
      args: ["-f", "SCRIPT"],
      script: `\\set o random(1, 200)
BEGIN;
LOCK TABLE docs IN SHARE ROW EXCLUSIVE MODE;
CREATE TEMP TABLE batch (owner int, n int) ON COMMIT DROP;
INSERT INTO batch SELECT :o, g FROM generate_series(1, 5) g;
CREATE TEMP TABLE picked ON COMMIT DROP AS SELECT owner, count(*) AS n FROM batch GROUP BY owner;
UPDATE docs SET note = 'batch ' || p.n FROM picked p WHERE docs.owner = p.owner AND docs.id IN (SELECT id FROM docs WHERE owner = :o LIMIT 2);
DO $$ BEGIN PERFORM count(*) FROM batch; END $$;
TRUNCATE batch;
COMMIT;
`,
      txnsPerClient: 100,
      runStatement: "LOCK TABLE docs",
      objectConfigs: [objectOn("public.docs", "public.customers", role)],
      unseen: ["DO blocks"],
      sensitive: "docs.note",
    },
    {
      name: "lines (60-row VALUES longer than track_activity_query_size, a parallel aggregate)",
      args: ["-f", "SCRIPT"],
      script: `\\set b random(10000, 99999)
BEGIN;
INSERT INTO batch_lines (batch, label, qty, price) VALUES (:b, 'label 1 of :b', 1, 1.50), (:b, 'label 2 of :b', 2, 2.50), (:b, 'label 3 of :b', 3, 3.50), (:b, 'label 4 of :b', 4, 4.50), (:b, 'label 5 of :b', 5, 5.50), (:b, 'label 6 of :b', 6, 6.50), (:b, 'label 7 of :b', 7, 7.50), (:b, 'label 8 of :b', 8, 8.50), (:b, 'label 9 of :b', 9, 9.50), (:b, 'label 10 of :b', 10, 10.50), (:b, 'label 11 of :b', 11, 11.50), (:b, 'label 12 of :b', 12, 12.50), (:b, 'label 13 of :b', 13, 13.50), (:b, 'label 14 of :b', 14, 14.50), (:b, 'label 15 of :b', 15, 15.50), (:b, 'label 16 of :b', 16, 16.50), (:b, 'label 17 of :b', 17, 17.50), (:b, 'label 18 of :b', 18, 18.50), (:b, 'label 19 of :b', 19, 19.50), (:b, 'label 20 of :b', 20, 20.50), (:b, 'label 21 of :b', 21, 21.50), (:b, 'label 22 of :b', 22, 22.50), (:b, 'label 23 of :b', 23, 23.50), (:b, 'label 24 of :b', 24, 24.50), (:b, 'label 25 of :b', 25, 25.50), (:b, 'label 26 of :b', 26, 26.50), (:b, 'label 27 of :b', 27, 27.50), (:b, 'label 28 of :b', 28, 28.50), (:b, 'label 29 of :b', 29, 29.50), (:b, 'label 30 of :b', 30, 30.50), (:b, 'label 31 of :b', 31, 31.50), (:b, 'label 32 of :b', 32, 32.50), (:b, 'label 33 of :b', 33, 33.50), (:b, 'label 34 of :b', 34, 34.50), (:b, 'label 35 of :b', 35, 35.50), (:b, 'label 36 of :b', 36, 36.50), (:b, 'label 37 of :b', 37, 37.50), (:b, 'label 38 of :b', 38, 38.50), (:b, 'label 39 of :b', 39, 39.50), (:b, 'label 40 of :b', 40, 40.50), (:b, 'label 41 of :b', 41, 41.50), (:b, 'label 42 of :b', 42, 42.50), (:b, 'label 43 of :b', 43, 43.50), (:b, 'label 44 of :b', 44, 44.50), (:b, 'label 45 of :b', 45, 45.50), (:b, 'label 46 of :b', 46, 46.50), (:b, 'label 47 of :b', 47, 47.50), (:b, 'label 48 of :b', 48, 48.50), (:b, 'label 49 of :b', 49, 49.50), (:b, 'label 50 of :b', 50, 50.50), (:b, 'label 51 of :b', 51, 51.50), (:b, 'label 52 of :b', 52, 52.50), (:b, 'label 53 of :b', 53, 53.50), (:b, 'label 54 of :b', 54, 54.50), (:b, 'label 55 of :b', 55, 55.50), (:b, 'label 56 of :b', 56, 56.50), (:b, 'label 57 of :b', 57, 57.50), (:b, 'label 58 of :b', 58, 58.50), (:b, 'label 59 of :b', 59, 59.50), (:b, 'label 60 of :b', 60, 60.50);
SELECT count(*), sum(qty) FROM batch_lines;
COMMIT;
`,
      txnsPerClient: 50,
      runStatement: "SELECT count(*), sum(qty) FROM batch_lines",
      objectConfigs: [objectOn("public.batch_lines", "public.docs", role)],
      sensitive: "batch_lines.label",
    },
    {
      name: "compound (statements sent together in one query string)",
      args: ["-f", "SCRIPT"],
      script: `\\set o random(1, 200)
BEGIN \\; UPDATE customers SET profile = profile || '{"seen": true}' WHERE id = :o \\; SELECT email, profile FROM customers WHERE id = :o \\; INSERT INTO order_events (order_id, status) SELECT id, 'viewed' FROM orders WHERE customer_id = :o LIMIT 1 \\; COMMIT;
SELECT count(*) FROM docs WHERE owner = :o;
`,
      txnsPerClient: 100,
      runStatement: "SELECT count(*) FROM docs WHERE owner",
      objectConfigs: [objectOn("public.customers", "public.order_events", role)],
      sensitive: "customers.email",
    },
    {
      name: "bulk (an ORM-style 50-row INSERT of bind parameters, longer than track_activity_query_size)",
      args: ["-M", "extended", "-f", "SCRIPT"],
      script: `\\set a random(1, 100000)
\\set t random(1, 10)
\\set d random(-5000, 5000)
BEGIN;
INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d), (:t, 1, :a, :d);
COMMIT;
`,
      txnsPerClient: 50,
      runStatement: "INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES",
      objectConfigs: [objectOn("public.pgbench_history", "public.pgbench_accounts", role)],
      sensitive: "pgbench_history.delta",
    },
  ];
}
