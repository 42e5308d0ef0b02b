-- Cleanup of TestDatabasesBookMariaDB.
DROP DATABASE IF EXISTS {db};
