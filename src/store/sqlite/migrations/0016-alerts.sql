-- Alerts (docs/alerts.md) — an alert message is an outbox row of kind 'alert' with the
-- failure it reports (run.failed, delivery.failed, callback.failed; 'summary' for the hour's
-- summary). The cap counts the last hour's alert messages through deliveries_alerts (exactly
-- store/rules/alerts.ts's COUNTED_ALERTS), and the summary finds the suppressed ones through
-- deliveries_suppressed.

ALTER TABLE deliveries ADD COLUMN alert_event TEXT;
CREATE INDEX deliveries_alerts ON deliveries (created_at)
  WHERE kind = 'alert' AND alert_event <> 'summary' AND status NOT IN ('suppressed', 'summarized');
CREATE INDEX deliveries_suppressed ON deliveries (created_at) WHERE status = 'suppressed';
