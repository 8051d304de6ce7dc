//go:build !race

/*
Copyright The robot-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1_test

// roundTrips is how many random Robots each direction converts: enough to
// reach every combination of the fields the conversion treats apart (no,
// one or several ports; each protocol; a strategy or none) many times over.
// Under the race detector, which finds nothing more in a pure function, a
// tenth (roundtrips_race_test.go); make unit also runs them without it.
const roundTrips = 5000
