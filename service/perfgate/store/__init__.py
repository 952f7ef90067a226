"""The SQL store: table classes, engines and sessions, migrations, repository and use cases."""
