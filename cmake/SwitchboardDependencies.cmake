# Every dependency comes from Debian 12 packages (scripts/setup.sh).
include(GNUInstallDirs)

find_package(Threads REQUIRED)
# Boost 1.81: Asio, Beast (header-only) + compiled JSON, URL. No EXACT: it
# would refuse 1.81.0 when asked for 1.81.
find_package(Boost 1.81 CONFIG REQUIRED COMPONENTS json url system)
find_package(OpenSSL 3 REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)
# libpq (libpq-dev) for the PostgreSQL store; the server itself is only
# needed by its tests (scripts/postgres-test-server.sh).
find_package(PostgreSQL REQUIRED)

# Header-only libraries unpacked into a build-local prefix by setup.sh.
set(SWITCHBOARD_DEPS_DIR "${PROJECT_SOURCE_DIR}/.deps" CACHE PATH
    "Where scripts/setup.sh unpacked valijson and the JSON-Schema-Test-Suite")
find_package(valijson CONFIG REQUIRED
  HINTS "${SWITCHBOARD_DEPS_DIR}/libvalijson-dev/usr/share/cmake/valijson"
        /usr/share/cmake/valijson)
set(SWITCHBOARD_JSON_SCHEMA_TEST_SUITE
    "${SWITCHBOARD_DEPS_DIR}/json-schema-test-suite/usr/share/json-schema-test-suite/tests/draft7"
    CACHE PATH "Draft-07 tests of the official JSON-Schema-Test-Suite")

# Asio: C++20 coroutines, no deprecated names, no Boost.DateTime.
add_compile_definitions(BOOST_ASIO_NO_DEPRECATED BOOST_ASIO_DISABLE_BOOST_DATE_TIME)
