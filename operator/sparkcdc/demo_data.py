"""The sample ``shop`` database used by ``make demo`` and the benchmarks.

Rows are generated inside the server with MariaDB's SEQUENCE engine, so a few hundred
thousand rows take seconds rather than a Python loop.
"""

from __future__ import annotations

SHOP_SCHEMA = """
CREATE DATABASE IF NOT EXISTS shop;
CREATE TABLE shop.customers (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  email VARCHAR(120) NOT NULL,
  name VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL,
  tier ENUM('bronze','silver','gold') NOT NULL,
  tags SET('new','vip','b2b','newsletter'),
  signed_up DATETIME(6) NOT NULL,
  last_seen TIMESTAMP(3) NULL,
  UNIQUE KEY email (email)
);
CREATE TABLE shop.products (
  sku VARCHAR(32) NOT NULL PRIMARY KEY,
  title VARCHAR(200) CHARACTER SET utf8mb4 NOT NULL,
  price DECIMAL(12,2) NOT NULL,
  weight_kg DOUBLE,
  active BIT(1) NOT NULL,
  attributes JSON,
  thumbnail VARBINARY(64)
);
CREATE TABLE shop.orders (
  id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  status ENUM('new','paid','shipped','cancelled') NOT NULL,
  total DECIMAL(14,2) NOT NULL,
  ordered_on DATE NOT NULL,
  note TEXT CHARACTER SET utf8mb4,
  KEY customer (customer_id)
);
CREATE TABLE shop.order_items (
  order_id BIGINT UNSIGNED NOT NULL,
  line SMALLINT NOT NULL,
  sku VARCHAR(32) NOT NULL,
  quantity INT NOT NULL,
  unit_price DECIMAL(12,2) NOT NULL,
  PRIMARY KEY (order_id, line)
);
"""


def shop_data_statements(customers: int, products: int, orders: int) -> list[str]:
    """INSERT … SELECT statements filling the shop tables from number sequences."""
    return [
        f"""INSERT INTO shop.customers
            SELECT seq, CONCAT('user', seq, '@example.com'),
                   CONCAT('Customer ', seq, IF(seq % 97 = 0, ' 🚀', '')),
                   ELT(1 + seq % 3, 'bronze', 'silver', 'gold'),
                   IF(seq % 5 = 0, 'vip,newsletter', IF(seq % 7 = 0, NULL, 'new')),
                   TIMESTAMP('2020-01-01') + INTERVAL seq MINUTE + INTERVAL (seq % 1000) MICROSECOND,
                   IF(seq % 4 = 0, NULL, TIMESTAMP('2024-01-01') + INTERVAL seq SECOND)
            FROM shop.seq_1_to_{customers}""",
        f"""INSERT INTO shop.products
            SELECT CONCAT('SKU-', LPAD(seq, 6, '0')), CONCAT('Product ', seq), (seq % 500) + 0.99,
                   IF(seq % 10 = 0, NULL, seq / 7), seq % 2,
                   JSON_OBJECT('color', ELT(1 + seq % 3, 'red', 'green', 'blue'), 'size', seq % 5),
                   IF(seq % 3 = 0, NULL, UNHEX(MD5(seq)))
            FROM shop.seq_1_to_{products}""",
        f"""INSERT INTO shop.orders
            SELECT seq, 1 + seq % {customers}, ELT(1 + seq % 4, 'new', 'paid', 'shipped', 'cancelled'),
                   (seq % 10000) / 100 + 5, DATE('2023-01-01') + INTERVAL (seq % 700) DAY,
                   IF(seq % 11 = 0, CONCAT('gift wrap ', seq, ' 🎁'), NULL)
            FROM shop.seq_1_to_{orders}""",
        f"""INSERT INTO shop.order_items
            SELECT o.seq, l.seq, CONCAT('SKU-', LPAD(1 + (o.seq * l.seq) % {products}, 6, '0')),
                   1 + (o.seq + l.seq) % 4, ((o.seq * 7 + l.seq) % 500) + 0.99
            FROM shop.seq_1_to_{orders} o JOIN shop.seq_1_to_2 l""",
    ]
