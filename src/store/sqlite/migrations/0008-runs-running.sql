-- Fair claiming counts the runs executing per source on every claim; without this
-- small index (running runs only) that count would read every run ever made.

CREATE INDEX runs_running ON runs (source) WHERE status = 'running';
