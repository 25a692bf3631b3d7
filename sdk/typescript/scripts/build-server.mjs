// Builds cmd/ledger once for the tests (into .ledger-test/ledger, or $LEDGER_BIN).
import { buildServer } from "../test/server.mjs";

buildServer();
