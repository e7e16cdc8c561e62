-- 0010_llm_endpoint_quirks: what a model endpoint taught goald,
-- remembered across jobs: an endpoint that wants max_completion_tokens,
-- refuses response_format, or takes at most max_tokens output tokens.
-- Keyed by the endpoint's base_url and the model name.
CREATE TABLE llm_endpoint_quirks (
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    use_max_completion INTEGER NOT NULL DEFAULT 0,
    no_response_format INTEGER NOT NULL DEFAULT 0,
    max_tokens INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (base_url, model)
) STRICT;
