# Thin wrappers around hack/; the scripts work without make too.
.PHONY: test lint crds golden verify demo venv

venv:
	bash -c "source hack/lib.sh && ensure_venv"

test:
	hack/test.sh

lint:
	hack/lint.sh

crds:
	hack/update-crds.sh

golden:
	hack/update-golden.sh

verify:
	hack/verify-crds.sh
	hack/verify-golden.sh

demo:
	hack/demo.sh
