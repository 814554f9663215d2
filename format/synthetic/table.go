package synthetic

import "slices"

// Dataset describes one synthetic dataset: its feature layout, shaped like
// the Open X-Embodiment dataset it is named after, and its default size.
// Feature keys are flattened TFDS keys, as a mix config names them.
type Dataset struct {
	// Name is the TFDS builder name and directory, always "synth_" + Like.
	Name string
	// Like is the OXE dataset whose layout this one imitates.
	Like string
	// Cameras are the image features; the first is the mix's image_key.
	Cameras []Camera
	// PNG: images are PNG, as in a few OXE datasets; JPEG otherwise.
	PNG bool
	// Actions are the per-step action tensors (float32): one flat
	// steps/action, or a dict such as world_vector + rotation_delta +
	// gripper_closedness_action. The mix's action_keys, in order.
	Actions []Tensor
	// State is the per-step proprioception (float32); Key is "" when the
	// dataset has none, as some OXE datasets have none.
	State Tensor
	// Language is the per-step instruction.
	Language Language
	// MinSteps and MaxSteps bound the default episode lengths, drawn
	// uniformly per episode.
	MinSteps, MaxSteps int
	// Episodes is the default number of train episodes.
	Episodes int
	// Offset is the mix's offset: frames between the two of a pair, about
	// half a second at the dataset's control rate.
	Offset int
}

// Camera is one image feature.
type Camera struct {
	Key           string // steps/observation/image
	Height, Width int
	// Wrist: the camera rides on the gripper and its view pans as the arm
	// moves.
	Wrist bool
}

// Tensor is a float32 vector feature.
type Tensor struct {
	Key string
	Dim int
}

// Language is a dataset's instruction feature.
type Language struct {
	Key string
	// Codepoints > 0 stores the instruction as an int32 tensor of that
	// many Unicode code points, zero padded (language_table's layout);
	// otherwise it is a TFDS Text.
	Codepoints int
}

const (
	obs = "steps/observation/"
	act = "steps/action"
)

var (
	// RT-1 style dict actions.
	rt1Action = []Tensor{{act + "/world_vector", 3}, {act + "/rotation_delta", 3}, {act + "/gripper_closedness_action", 1}}
	flatAct   = func(n int) []Tensor { return []Tensor{{act, n}} }
	textLang  = Language{Key: "steps/language_instruction"}
	rt1Lang   = Language{Key: obs + "natural_language_instruction"}
)

func cams(key string, h, w int, more ...Camera) []Camera {
	return append([]Camera{{Key: obs + key, Height: h, Width: w}}, more...)
}

func cam(key string, h, w int) Camera { return Camera{Key: obs + key, Height: h, Width: w} }

func wrist(key string, h, w int) Camera {
	return Camera{Key: obs + key, Height: h, Width: w, Wrist: true}
}

// table is the synthetic mix, in the order --datasets takes them. Its first
// four cover the unusual layouts (dict actions, two cameras, code points,
// PNG) so that a small run still exercises them. Frame sizes, camera sets,
// action and state widths and episode lengths follow the OXE datasets they
// are named after, clamped to 128×128–480×640 and 20–120 steps.
var table = []Dataset{
	{Name: "synth_fractal", Like: "fractal20220817_data", Cameras: cams("image", 256, 320),
		Actions: rt1Action, State: Tensor{obs + "base_pose_tool_reached", 7}, Language: rt1Lang,
		MinSteps: 30, MaxSteps: 60, Episodes: 48, Offset: 5},
	{Name: "synth_bridge", Like: "bridge", Cameras: cams("image_0", 256, 256, cam("image_1", 256, 256)),
		Actions: flatAct(7), State: Tensor{obs + "state", 7}, Language: textLang,
		MinSteps: 25, MaxSteps: 50, Episodes: 48, Offset: 5},
	{Name: "synth_language_table", Like: "language_table", Cameras: cams("rgb", 360, 640),
		Actions: flatAct(2), State: Tensor{obs + "effector_translation", 2},
		Language: Language{Key: obs + "instruction", Codepoints: 512},
		MinSteps: 20, MaxSteps: 40, Episodes: 32, Offset: 3},
	{Name: "synth_cmu_stretch", Like: "cmu_stretch", Cameras: cams("image", 128, 128), PNG: true,
		Actions: flatAct(8), State: Tensor{obs + "state", 4}, Language: textLang,
		MinSteps: 40, MaxSteps: 80, Episodes: 24, Offset: 5},
	{Name: "synth_kuka", Like: "kuka", Cameras: cams("image", 480, 640),
		Actions: rt1Action, State: Tensor{obs + "clip_function_input/base_pose_tool_reached", 7}, Language: rt1Lang,
		MinSteps: 20, MaxSteps: 30, Episodes: 24, Offset: 3},
	{Name: "synth_taco_play", Like: "taco_play", Cameras: cams("rgb_static", 150, 200, wrist("rgb_gripper", 128, 128)),
		Actions: []Tensor{{act + "/rel_actions_world", 7}}, State: Tensor{obs + "robot_obs", 15}, Language: rt1Lang,
		MinSteps: 40, MaxSteps: 80, Episodes: 32, Offset: 5},
	{Name: "synth_jaco_play", Like: "jaco_play", Cameras: cams("image", 224, 224, wrist("image_wrist", 224, 224)),
		Actions: []Tensor{{act + "/world_vector", 3}, {act + "/gripper_closedness_action", 1}},
		State:   Tensor{obs + "end_effector_cartesian_pos", 7}, Language: rt1Lang,
		MinSteps: 40, MaxSteps: 90, Episodes: 24, Offset: 5},
	{Name: "synth_berkeley_cable_routing", Like: "berkeley_cable_routing",
		Cameras: cams("image", 128, 128, cam("top_image", 128, 128), wrist("wrist45_image", 128, 128)),
		Actions: []Tensor{{act + "/world_vector", 3}, {act + "/rotation_delta", 3}},
		State:   Tensor{obs + "robot_state", 7}, Language: rt1Lang,
		MinSteps: 30, MaxSteps: 60, Episodes: 32, Offset: 5},
	{Name: "synth_roboturk", Like: "roboturk", Cameras: cams("front_rgb", 480, 640),
		Actions: rt1Action, Language: rt1Lang,
		MinSteps: 40, MaxSteps: 100, Episodes: 16, Offset: 5},
	{Name: "synth_viola", Like: "viola", Cameras: cams("agentview_rgb", 224, 224, wrist("eye_in_hand_rgb", 224, 224)),
		Actions: rt1Action, State: Tensor{obs + "joint_states", 7}, Language: rt1Lang,
		MinSteps: 60, MaxSteps: 120, Episodes: 16, Offset: 8},
	{Name: "synth_berkeley_autolab_ur5", Like: "berkeley_autolab_ur5",
		Cameras: cams("image", 480, 640, wrist("hand_image", 480, 640)),
		Actions: rt1Action, State: Tensor{obs + "robot_state", 15}, Language: rt1Lang,
		MinSteps: 40, MaxSteps: 100, Episodes: 12, Offset: 5},
	{Name: "synth_toto", Like: "toto", Cameras: cams("image", 480, 640),
		Actions: []Tensor{{act + "/world_vector", 3}, {act + "/rotation_delta", 3}, {act + "/open_gripper", 1}},
		State:   Tensor{obs + "state", 7}, Language: rt1Lang,
		MinSteps: 60, MaxSteps: 120, Episodes: 12, Offset: 8},
	{Name: "synth_stanford_hydra", Like: "stanford_hydra_dataset_converted_externally_to_rlds",
		Cameras: cams("image", 240, 320, wrist("wrist_image", 240, 320)),
		Actions: flatAct(7), State: Tensor{obs + "state", 14}, Language: textLang,
		MinSteps: 60, MaxSteps: 120, Episodes: 16, Offset: 8},
	{Name: "synth_austin_buds", Like: "austin_buds_dataset_converted_externally_to_rlds",
		Cameras: cams("image", 128, 128, wrist("wrist_image", 128, 128)),
		Actions: flatAct(7), State: Tensor{obs + "state", 12}, Language: textLang,
		MinSteps: 60, MaxSteps: 120, Episodes: 24, Offset: 8},
	{Name: "synth_nyu_franka_play", Like: "nyu_franka_play_dataset_converted_externally_to_rlds",
		Cameras: cams("image", 128, 128, cam("image_additional_view", 128, 128)),
		Actions: flatAct(15), State: Tensor{obs + "state", 13}, Language: textLang,
		MinSteps: 40, MaxSteps: 80, Episodes: 32, Offset: 5},
	{Name: "synth_furniture_bench", Like: "furniture_bench_dataset_converted_externally_to_rlds",
		Cameras: cams("image", 224, 224, wrist("wrist_image", 224, 224)),
		Actions: flatAct(8), State: Tensor{obs + "state", 15}, Language: textLang,
		MinSteps: 80, MaxSteps: 120, Episodes: 16, Offset: 10},
	{Name: "synth_ucsd_kitchen", Like: "ucsd_kitchen_dataset_converted_externally_to_rlds", Cameras: cams("image", 480, 640),
		Actions: flatAct(8), State: Tensor{obs + "state", 10}, Language: textLang,
		MinSteps: 20, MaxSteps: 40, Episodes: 24, Offset: 3},
	{Name: "synth_austin_sailor", Like: "austin_sailor_dataset_converted_externally_to_rlds",
		Cameras: cams("image", 128, 128, wrist("wrist_image", 128, 128)),
		Actions: flatAct(7), State: Tensor{obs + "state", 8}, Language: textLang,
		MinSteps: 60, MaxSteps: 120, Episodes: 24, Offset: 8},
	{Name: "synth_austin_sirius", Like: "austin_sirius_dataset_converted_externally_to_rlds",
		Cameras: cams("image", 128, 128, wrist("wrist_image", 128, 128)),
		Actions: flatAct(7), State: Tensor{obs + "state", 8}, Language: textLang,
		MinSteps: 60, MaxSteps: 120, Episodes: 24, Offset: 8},
	{Name: "synth_bc_z", Like: "bc_z", Cameras: cams("image", 171, 213),
		Actions: []Tensor{{act + "/xyz_residual", 30}}, State: Tensor{obs + "xyz", 3}, Language: rt1Lang,
		MinSteps: 20, MaxSteps: 50, Episodes: 48, Offset: 3},
	{Name: "synth_dlr_edan_shared_control", Like: "dlr_edan_shared_control_converted_externally_to_rlds",
		Cameras: cams("image", 360, 640),
		Actions: flatAct(7), State: Tensor{obs + "state", 7}, Language: textLang,
		MinSteps: 20, MaxSteps: 60, Episodes: 16, Offset: 5},
	{Name: "synth_iamlab_cmu_pickup_insert", Like: "iamlab_cmu_pickup_insert_converted_externally_to_rlds",
		Cameras: cams("image", 360, 640, wrist("wrist_image", 240, 320)),
		Actions: flatAct(8), State: Tensor{obs + "state", 15}, Language: textLang,
		MinSteps: 60, MaxSteps: 120, Episodes: 12, Offset: 8},
	{Name: "synth_utaustin_mutex", Like: "utaustin_mutex",
		Cameras: cams("image", 128, 128, wrist("wrist_image", 128, 128)),
		Actions: flatAct(7), State: Tensor{obs + "state", 15}, Language: textLang,
		MinSteps: 60, MaxSteps: 120, Episodes: 24, Offset: 8},
	{Name: "synth_berkeley_fanuc_manipulation", Like: "berkeley_fanuc_manipulation",
		Cameras: cams("image", 224, 224, wrist("wrist_image", 224, 224)),
		Actions: flatAct(6), State: Tensor{obs + "state", 13}, Language: textLang,
		MinSteps: 20, MaxSteps: 60, Episodes: 24, Offset: 5},
	{Name: "synth_dobbe", Like: "dobbe", Cameras: []Camera{wrist("wrist_image", 256, 256)},
		Actions: flatAct(7), State: Tensor{obs + "proprio", 7}, Language: textLang,
		MinSteps: 40, MaxSteps: 100, Episodes: 24, Offset: 5},
	{Name: "synth_fmb", Like: "fmb",
		Cameras: cams("image_side_1", 256, 256, cam("image_side_2", 256, 256), wrist("image_wrist_1", 256, 256)),
		Actions: flatAct(7), State: Tensor{obs + "eef_pose", 8}, Language: textLang,
		MinSteps: 60, MaxSteps: 120, Episodes: 16, Offset: 8},
	{Name: "synth_droid", Like: "droid",
		Cameras: cams("exterior_image_1_left", 180, 320, cam("exterior_image_2_left", 180, 320), wrist("wrist_image_left", 180, 320)),
		Actions: flatAct(7), State: Tensor{obs + "cartesian_position", 6}, Language: textLang,
		MinSteps: 60, MaxSteps: 120, Episodes: 24, Offset: 8},
	{Name: "synth_robo_net", Like: "robo_net",
		Cameras: cams("image", 240, 320, cam("image1", 240, 320), cam("image2", 240, 320)),
		Actions: flatAct(5), State: Tensor{obs + "state", 5}, Language: textLang,
		MinSteps: 20, MaxSteps: 40, Episodes: 32, Offset: 3},
	{Name: "synth_columbia_cairlab_pusht_real", Like: "columbia_cairlab_pusht_real",
		Cameras: cams("image", 240, 320, wrist("wrist_image", 240, 320)),
		Actions: flatAct(7), State: Tensor{obs + "robot_state", 2}, Language: rt1Lang,
		MinSteps: 20, MaxSteps: 60, Episodes: 24, Offset: 5},
}

// Datasets returns the synthetic mix, all of it, in the order --datasets
// takes it. The result is a copy.
func Datasets() []Dataset {
	out := make([]Dataset, len(table))
	for i, d := range table {
		d.Cameras = slices.Clone(d.Cameras)
		d.Actions = slices.Clone(d.Actions)
		out[i] = d
	}
	return out
}
