/**
 * The overhead proof's workload, unlike TPC-B: an order placed in one transaction of eight
 * statements — a customer read, an order inserted (its key RETURNING into the next statements),
 * two items inserted from a SELECT (foreign keys to the order and the product), two stocks
 * updated, the order's total computed and set (an UPDATE of a row the same transaction
 * inserted, which re-runs its foreign-key check), the customer's balance updated.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export const SHOP_INIT = `CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL, balance numeric NOT NULL DEFAULT 0);
CREATE TABLE products (id int PRIMARY KEY, name text NOT NULL, price numeric NOT NULL, stock bigint NOT NULL);
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id bigint NOT NULL REFERENCES customers (id),
                     status text NOT NULL DEFAULT 'new', total numeric NOT NULL DEFAULT 0,
                     created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE order_items (order_id bigint NOT NULL REFERENCES orders (id),
                          product_id int NOT NULL REFERENCES products (id),
                          qty int NOT NULL, price numeric NOT NULL, PRIMARY KEY (order_id, product_id));
INSERT INTO customers SELECT g, 'user' || g || '@example.com', 0 FROM generate_series(1, 10000) g;
INSERT INTO products SELECT g, 'product ' || g, (g % 100) + 0.99, 1000000000 FROM generate_series(1, 1000) g;
ANALYZE customers, products, orders, order_items;
`;

export const SHOP_SCRIPT = `\\set c random(1, 10000)
\\set p1 random(1, 500)
\\set p2 random(501, 1000)
BEGIN;
SELECT email, balance FROM customers WHERE id = :c;
INSERT INTO orders (customer_id) VALUES (:c) RETURNING id \\gset
INSERT INTO order_items (order_id, product_id, qty, price) SELECT :id, id, 1, price FROM products WHERE id IN (:p1, :p2);
UPDATE products SET stock = stock - 1 WHERE id IN (:p1, :p2);
UPDATE orders SET total = (SELECT sum(qty * price) FROM order_items WHERE order_id = :id), status = 'placed' WHERE id = :id;
UPDATE customers SET balance = balance - 1 WHERE id = :c;
COMMIT;
`;

/** Writes the two files into `dir`: the init SQL (bench --init) and the pgbench script (--script). */
export function writeShopFiles(dir: string): { init: string; script: string } {
  const init = join(dir, "shop-init.sql");
  const script = join(dir, "shop.sql");
  writeFileSync(init, SHOP_INIT);
  writeFileSync(script, SHOP_SCRIPT);
  return { init, script };
}
