"""Pure builders: (spec, plan, owner) → Kubernetes objects as dicts."""
