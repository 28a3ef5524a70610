# operator-sdk's scorecard-test image (quay.io/operator-framework/scorecard-test,
# the tag bundle/tests/scorecard/config.yaml names), as its
# images/scorecard-test/Dockerfile lays it out but FROM scratch (upstream:
# ubi9/ubi-minimal): /usr/local/bin/scorecard-test (hack/tools.sh
# scorecard-test, static, from operator-sdk's module source), HOME and the
# working directory /opt/scorecard-test, user 1001. `operator-sdk scorecard`
# runs each basic and OLM test in a pod of it with the test's entrypoint
# (`scorecard-test basic-check-spec`, ...); the bundle is at /bundle. The
# context is the directory hack/images.sh fills (dist/scorecard-test).
FROM scratch
COPY scorecard-test /usr/local/bin/scorecard-test
ENV HOME=/opt/scorecard-test PATH=/usr/local/bin:/usr/bin:/bin
WORKDIR /opt/scorecard-test
USER 1001
ENTRYPOINT ["/usr/local/bin/scorecard-test"]
