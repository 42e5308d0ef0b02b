-- +goose Up
-- The deliveries of one run to one webhook in the order they were written:
-- a claimed delivery's sequence number (the "sequence" of its payload) is
-- its rank among them (sqlstore.deliverySequences), found through this
-- index whatever the webhook's history.
CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (webhook_id, run_id, create_time, id);

-- +goose Down
DROP INDEX webhook_deliveries_by_run;
