"""The GPU driver on an Alibaba Cloud public image that carries none: the console's own way.

Where a region's public images name no GPU driver, ECS's console offers "auto-install GPU
driver" on a public image when a GPU instance is created ("Create an instance equipped
with NVIDIA GPUs": "You can select the automatic installation method when you create an
instance or you can manually install a driver after the instance is created"). It does it
with instance user data: a short shell script that fetches
Alibaba Cloud's install script from the region's own mirror (the instance metadata's
``source-address``, path ``/opsx/ecs/linux/binary/script/``) and runs it with the driver,
CUDA and cuDNN versions. The script below is that user data as Alibaba Cloud's own Compute
Nest templates send it (github.com/aliyun-computenest/quickstart-LobeChat,
``lobe-chat-gpu/init_gpu.sh``), versions included. It goes next to gpudesk's first-boot
cloud-config as cloud-init multipart user data (ECS takes 32 KB of it, raw).

The driver is installed at first boot, after SSH already answers (ten minutes or more);
its log is in ``/root/auto_install``. A GPU run started before it is done finds no driver
and says so (the run's driver check).
"""

from __future__ import annotations

import re

DRIVER_VERSION = "550.127.08"
CUDA_VERSION = "12.4.1"
CUDNN_VERSION = "9.2.0.82"
INSTALL_DIR = "/root/auto_install"
INSTALL_SCRIPT = "auto_install_v4.0.sh"

SCRIPT = f"""#!/bin/sh
# The GPU driver, as ECS's "auto-install GPU driver" installs it on a public image
DRIVER_VERSION="{DRIVER_VERSION}"
CUDA_VERSION="{CUDA_VERSION}"
CUDNN_VERSION="{CUDNN_VERSION}"
IS_INSTALL_eRDMA="FALSE"
IS_INSTALL_RDMA="FALSE"
INSTALL_DIR="{INSTALL_DIR}"
auto_install_script="{INSTALL_SCRIPT}"
script_download_url=$(curl http://100.100.100.200/latest/meta-data/source-address \
| head -1)"/opsx/ecs/linux/binary/script/${{auto_install_script}}"
rm -rf $INSTALL_DIR
mkdir -p $INSTALL_DIR
cd $INSTALL_DIR && wget -t 10 --timeout=10 $script_download_url && bash \
${{INSTALL_DIR}}/${{auto_install_script}} $DRIVER_VERSION $CUDA_VERSION $CUDNN_VERSION \
$IS_INSTALL_RDMA $IS_INSTALL_eRDMA
"""

BOUNDARY = "==gpudesk-user-data=="


def _part(text: str) -> str:
    kind = "text/cloud-config" if text.startswith("#cloud-config") else "text/x-shellscript"
    return (f"--{BOUNDARY}\nMIME-Version: 1.0\nContent-Type: {kind}; "
            f'charset="utf-8"\n\n{text.rstrip()}\n')


def with_driver(user_data: str) -> str:
    """``user_data`` (gpudesk's first boot, or nothing) with the driver install next to it:
    the script alone, or both as cloud-init multipart user data, each run at first boot."""
    if not user_data.strip():
        return SCRIPT
    return (f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"\nMIME-Version: 1.0\n\n'
            + _part(user_data) + _part(SCRIPT) + f"--{BOUNDARY}--\n")


# Alibaba Cloud's public Ubuntu images are named by their id: ubuntu_<ver>_x64_<disk>G_
# alibase_<date>.vhd (DescribeImages, ImageOwnerAlias "system"); an image with a GPU driver
# says so in its id (gpu, cuda, nvidia), as aliyun_parse.is_gpu_image reads its name.
PLAIN_UBUNTU_ID = re.compile(r"^ubuntu_\d+_\d+_x64_\d+G_alibase_\d{8}\.vhd$")
GPU_WORDS = ("gpu", "cuda", "nvidia")


def is_plain_ubuntu(image_id: str) -> bool:
    """A public Ubuntu image id that names no GPU driver: one typed in the Image field (or
    ``--image``) gets the driver at first boot as the one ``find_image`` picks does."""
    text = image_id.strip()
    return bool(PLAIN_UBUNTU_ID.match(text)) and not any(w in text.lower() for w in GPU_WORDS)
