package precheck

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	plain       = `{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"plain","namespace":"a","uid":"1"},"spec":{"image":"x","port":8080}}`
	oddQuantity = `{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"odd","namespace":"a","uid":"2"},"spec":{"image":"x","resources":{"limits":{"cpu":"1e1.5"}}}}`
	foreign     = `{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"foreign","namespace":"b","uid":"3","annotations":{"robot.dev/conversion-data":"mine"}},"spec":{"image":"x"}}`
	newer       = `{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"newer","namespace":"b","uid":"4"},"spec":{"image":"x","gpus":1}}`
	betaOdd     = `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"beta-odd","namespace":"c","uid":"5"},"spec":{"image":"x","resources":{"requests":{"memory":"1e1.5Mi"}}}}`
)

// pages serves lists of Robots by version, two Robots a page.
func pages(robots map[string][]string) ListPage {
	return func(_ context.Context, version, next string) ([]byte, error) {
		items, ok := robots[version]
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "robot.dev", Resource: "robots"}, "")
		}
		start := 0
		if next != "" {
			fmt.Sscan(next, &start)
		}
		end := min(start+2, len(items))
		cont := ""
		if end < len(items) {
			cont = fmt.Sprint(end)
		}
		return fmt.Appendf(nil, `{"metadata":{"continue":%q},"items":[%s]}`, cont, strings.Join(items[start:end], ",")), nil
	}
}

func TestReportsWhatWouldNotConvertCleanly(t *testing.T) {
	report := Run(t.Context(), pages(map[string][]string{"v1alpha1": {plain, oddQuantity, foreign, newer}}))
	if !report.Failed() {
		t.Fatal("the check passed, want it to fail")
	}
	if report.Checked["v1alpha1"] != 4 || len(report.NotServed) != 1 || report.NotServed[0] != "v1beta1" {
		t.Errorf("checked %v, not served %v; want the 4 v1alpha1 Robots over two pages, and v1beta1 not served", report.Checked, report.NotServed)
	}
	var out strings.Builder
	report.Write(&out)
	for _, want := range []string{
		"a/odd (read as robot.dev/v1alpha1): holds a value the operator cannot read",
		"b/foreign (read as robot.dev/v1alpha1): its robot.dev/conversion-data annotation would be ignored (not_conversion_data)",
		`b/newer (read as robot.dev/v1alpha1): would not convert to robot.dev/v1beta1`, `"spec.gpus"`,
		"3 problems",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report does not say %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "a/plain") {
		t.Errorf("the report names a Robot that converts cleanly:\n%s", out.String())
	}
}

func TestPassesWhenEveryRobotConverts(t *testing.T) {
	report := Run(t.Context(), pages(map[string][]string{"v1alpha1": {plain}, "v1beta1": {}}))
	var out strings.Builder
	report.Write(&out)
	if report.Failed() || !strings.Contains(out.String(), "every Robot converts cleanly (1 read as robot.dev/v1alpha1, 0 read as robot.dev/v1beta1)") {
		t.Errorf("failed %v:\n%s", report.Failed(), out.String())
	}
}

func TestFailsWhenAVersionCannotBeListed(t *testing.T) {
	report := Run(t.Context(), func(_ context.Context, version, _ string) ([]byte, error) {
		if version == "v1beta1" {
			return nil, fmt.Errorf("conversion webhook for robot.dev/v1alpha1, Kind=Robot failed")
		}
		return fmt.Appendf(nil, `{"metadata":{},"items":[%s]}`, betaOdd), nil
	})
	var out strings.Builder
	report.Write(&out)
	if !report.Failed() || !strings.Contains(out.String(), "listing Robots as robot.dev/v1beta1 failed") || !strings.Contains(out.String(), "c/beta-odd (read as robot.dev/v1beta1): holds a value") {
		t.Errorf("failed %v:\n%s", report.Failed(), out.String())
	}
}

func TestNothingServedFails(t *testing.T) {
	if report := Run(t.Context(), pages(nil)); !report.Failed() {
		t.Error("the check passed with no version served")
	}
}

// TestNamesWhatTheOperatorWillRefuse: a Robot stored beyond the CRD's rules
// (17 ports, written around validation) is named with the operator's
// InvalidSpec message, and a Robot that can run is not.
func TestNamesWhatTheOperatorWillRefuse(t *testing.T) {
	var ports []string
	for i := range 17 {
		ports = append(ports, fmt.Sprintf(`{"name":"p%d","containerPort":%d,"protocol":"TCP"}`, i, 9000+i))
	}
	tooMany := `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"many","namespace":"c","uid":"6"},"spec":{"image":"x","ports":[` + strings.Join(ports, ",") + `]}}`
	fine := `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"fine","namespace":"c","uid":"7"},"spec":{"image":"x","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"metrics","containerPort":9090,"protocol":"TCP"}]}}`
	var out strings.Builder
	Run(t.Context(), pages(map[string][]string{"v1beta1": {tooMany, fine}})).Write(&out)
	if !strings.Contains(out.String(), "c/many (read as robot.dev/v1beta1): the operator will report it InvalidSpec: invalid spec: spec.ports must have at most 16 ports, not 17") || strings.Contains(out.String(), "c/fine") {
		t.Errorf("the report:\n%s", out.String())
	}
}

// TestNamesTheRobotsOfEveryLISTsFailure: a Robot whose v1alpha1 form the API
// server refuses (its annotations and the kept fields over 256 KiB) fails
// every LIST of v1alpha1 under an earlier release's webhook; the check names
// it from the v1beta1 LIST, with what a write through v1alpha1 loses. A
// Robot whose annotation holds a key twice, or in another case than the
// field's, is named too.
func TestNamesTheRobotsOfEveryLISTsFailure(t *testing.T) {
	big := `{"apiVersion":"robot.dev/v1beta1","kind":"Robot","metadata":{"name":"big","namespace":"tenant-b","uid":"8","annotations":{"big":"` + strings.Repeat("x", 262068) + `"}},` +
		`"spec":{"image":"x","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"metrics","containerPort":9090,"protocol":"TCP"}]}}`
	folded := `{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"folded","namespace":"tenant-a","uid":"9","annotations":{"robot.dev/conversion-data":"{\"sidecars\":[{\"name\":\"a\",\"image\":\"x\"}],\"SIDECARS\":[]}"}},"spec":{"image":"x","port":8080}}`
	twice := `{"apiVersion":"robot.dev/v1alpha1","kind":"Robot","metadata":{"name":"twice","namespace":"tenant-a","uid":"10","annotations":{"robot.dev/conversion-data":"{\"minReadySeconds\":5,\"minReadySeconds\":6}"}},"spec":{"image":"x","port":8080}}`
	report := Run(t.Context(), func(_ context.Context, version, _ string) ([]byte, error) {
		if version == "v1alpha1" {
			return fmt.Appendf(nil, `{"metadata":{},"items":[%s,%s]}`, folded, twice), nil
		}
		return fmt.Appendf(nil, `{"metadata":{},"items":[%s]}`, big), nil
	})
	var out strings.Builder
	report.Write(&out)
	for _, want := range []string{
		"tenant-b/big (read as robot.dev/v1beta1): read as robot.dev/v1alpha1, its annotations with robot.dev/conversion-data would be over what the API server accepts",
		"metadata.annotations: Too long",
		`tenant-a/folded (read as robot.dev/v1alpha1): its robot.dev/conversion-data annotation would be ignored (not_conversion_data)`, `unknown field "SIDECARS"`,
		`tenant-a/twice (read as robot.dev/v1alpha1): its robot.dev/conversion-data annotation would be ignored (not_conversion_data)`, `duplicate field "minReadySeconds"`,
		"3 problems",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report does not say %q:\n%.2000s", want, out.String())
		}
	}
	if !report.Failed() {
		t.Error("the check passed")
	}
}
