// CUDA MPS detection.
#pragma once

namespace gnnd {

// Whether a CUDA MPS control daemon accepts connections on its socket ($CUDA_MPS_PIPE_DIRECTORY/control,
// /tmp/nvidia-mps/control by default). Decides producer_sms auto; gnnd warns when none does.
bool MpsActive();

}  // namespace gnnd
