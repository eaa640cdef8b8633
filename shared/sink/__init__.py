"""Pure decisions of the idempotent sink: event model, watermark, reorder buffer, batch plan, offsets."""
