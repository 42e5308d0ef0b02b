-- Fixture of TestDatabasesBookPostgreSQL (the database is the test's own).
CREATE TABLE orders (id int, name text, amount numeric(10,2), placed timestamptz);
INSERT INTO orders VALUES (1, 'Ana', 12.50, now()), (2, 'Bea', 10.25, now()), (3, 'Cy', 1.00, now()), (4, 'Dan', 99.99, now());
