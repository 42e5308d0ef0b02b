-- Fixture of TestDatabasesBookMariaDB; {db} is the test's own database.
CREATE DATABASE {db};
CREATE TABLE {db}.orders (id int, name varchar(20), amount decimal(10,2), placed datetime);
INSERT INTO {db}.orders VALUES (1, 'Ana', 12.50, now()), (2, 'Bea', 10.25, now()), (3, 'Cy', 1.00, now()), (4, 'Dan', 99.99, now());
