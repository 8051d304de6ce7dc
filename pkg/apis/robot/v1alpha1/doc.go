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

// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/robot-operator/robot-operator/pkg/apis/robot/v1beta1
// +groupName=robot.dev
// +kubebuilder:object:generate=false

// Package v1alpha1 is version v1alpha1 of the robot.dev API group: the Robot
// resource, which asks the operator to run a container image as a Deployment.
package v1alpha1
