-- 0005_test_cases: a gate's parsed test cases (docs/verification.md, "Test
-- cases"), one row per case, failures first, at most 20000 per gate run;
-- gate_results.note says why a report file was ignored or rows were cut.
CREATE TABLE gate_cases (
    gate_result_id INTEGER NOT NULL REFERENCES gate_results(id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('pass','fail','skip')),
    file           TEXT
);
CREATE INDEX gate_cases_result ON gate_cases(gate_result_id, status);
ALTER TABLE gate_results ADD COLUMN tests_format TEXT;
ALTER TABLE gate_results ADD COLUMN note TEXT;
