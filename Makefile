# Thin wrappers around hack/; the scripts work without make too.
.PHONY: test test-fast lint crds golden verify demo venv

venv:
	bash -c "source hack/lib.sh && ensure_venv"

test:
	hack/test.sh

test-fast:
	hack/test-fast.sh

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
