"""Pure status computation: (spec, plan, observed children, metrics, now) → status."""
