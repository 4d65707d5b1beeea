<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
    <context>
        <name>AboutDialog</name>
        <message>
            <source>see LICENSE</source>
            <translation>见 LICENSE 文件</translation>
        </message>
        <message>
            <source>About gpudesk</source>
            <translation>关于 gpudesk</translation>
        </message>
        <message>
            <source>gpudesk {version}
Plan, rent, sync, train and watch cloud GPUs from one window.
{system}</source>
            <translation>gpudesk {version}
在一个窗口中规划、租用、同步、训练和监控云 GPU。
{system}</translation>
        </message>
        <message>
            <source>Component</source>
            <translation>组件</translation>
        </message>
        <message>
            <source>Version</source>
            <translation>版本</translation>
        </message>
        <message>
            <source>Licence</source>
            <translation>许可证</translation>
        </message>
        <message>
            <source>Qt and PySide6 are used under the GNU LGPL version 3; their source is available from qt.io.</source>
            <translation>Qt 和 PySide6 依据 GNU LGPL 第 3 版使用；其源代码可从 qt.io 获取。</translation>
        </message>
    </context>
    <context>
        <name>AccountsPage</name>
        <message>
            <source>Keys are stored only in the system keyring, never in a file, a log or the command line. Give gpudesk keys of a user that may launch, stop and terminate instances and manage key pairs and security groups — nothing more.</source>
            <translation>密钥只保存在系统密钥环中，绝不写入文件、日志或命令行。请给 gpudesk 一个只能启动、停止、销毁实例以及管理密钥对和安全组的用户的密钥——不要更多权限。</translation>
        </message>
    </context>
    <context>
        <name>Agent</name>
        <message>
            <source>Could not set up the gpudesk agent on {target}: {detail}</source>
            <translation>无法在 {target} 上安装 gpudesk 代理：{detail}</translation>
        </message>
        <message>
            <source>The gpudesk agent on {target} did not start: {detail}. Its log is {log}.</source>
            <translation>{target} 上的 gpudesk 代理未能启动：{detail}。其日志位于 {log}。</translation>
        </message>
        <message>
            <source>The agent rules are not valid: {detail}</source>
            <translation>代理规则无效：{detail}</translation>
        </message>
        <message>
            <source>The first-boot script is {size} bytes; clouds take at most {limit}.</source>
            <translation>首次启动脚本有 {size} 字节；云最多接受 {limit} 字节。</translation>
        </message>
        <message>
            <source>The run's machine group {group} was set to 0 machines and deleted.</source>
            <translation>运行的机器组 {group} 已缩减到 0 台并删除。</translation>
        </message>
        <message>
            <source>The run's machine group {group} is at 0 machines; it is deleted once its last machine is gone.</source>
            <translation>运行的机器组 {group} 已缩减到 0 台；最后一台机器释放后即会删除。</translation>
        </message>
        <message>
            <source>Could not end the run's machine group {group} in {region} ({error}); trying again in {retry_s} s.</source>
            <translation>无法结束运行的机器组 {group}（{region}）：{error}；{retry_s} 秒后重试。</translation>
        </message>
        <message>
            <source>the group is in {region}, but this machine is in {here}</source>
            <translation>该组位于 {region}，但这台机器位于 {here}</translation>
        </message>
        <message>
            <source>{service} refused {action} ({code}): {message}</source>
            <translation>{service} 拒绝了 {action}（{code}）：{message}</translation>
        </message>
        <message>
            <source>the cloud still shows the group at {desired} machines</source>
            <translation>云上仍显示该组有 {desired} 台机器</translation>
        </message>
        <message>
            <source>run {run} started on {machine} from the bucket (no checkpoint yet)</source>
            <translation>运行 {run} 已在 {machine} 上从存储桶启动（尚无检查点）</translation>
        </message>
        <message>
            <source>run {run} resumed on {machine} from step {step} ({checkpoint})</source>
            <translation>运行 {run} 已在 {machine} 上从第 {step} 步恢复（{checkpoint}）</translation>
        </message>
        <message>
            <source>run {run} already {state} (exit status {code}): not started again</source>
            <translation>运行 {run} 已{state}（退出状态 {code}）：不再重新启动</translation>
        </message>
        <message>
            <source>run {run} is already running on this machine (pid {pid}): not started twice</source>
            <translation>运行 {run} 已在这台机器上运行（pid {pid}）：不会启动第二次</translation>
        </message>
        <message>
            <source>the code of run {run} ({key}) has SHA-256 {got} but run.json says {want}: refused, the run was not started</source>
            <translation>运行 {run} 的代码（{key}）的 SHA-256 为 {got}，但 run.json 写的是 {want}：已拒绝，运行未启动</translation>
        </message>
        <message>
            <source>could not resume run {run} on this machine: {error}</source>
            <translation>无法在这台机器上恢复运行 {run}：{error}</translation>
        </message>
    </context>
    <context>
        <name>AllowMeOffer</name>
        <message>
            <source>Allow my new address?</source>
            <translation>允许我的新地址？</translation>
        </message>
        <message>
            <source>SSH to {name} failed, and this computer's public address ({here}) is not the one its security group lets in ({rule}): this network is probably why.

Open SSH to {here} instead (the old address loses access)?</source>
            <translation>连接 {name} 的 SSH 失败，而本机的公网地址（{here}）并不是其安全组放行的地址（{rule}）：很可能是换了网络所致。

改为向 {here} 开放 SSH 吗（旧地址将失去访问权限）？</translation>
        </message>
        <message>
            <source>The SSH rule of {name} was left as it was.</source>
            <translation>{name} 的 SSH 规则保持不变。</translation>
        </message>
        <message>
            <source>SSH to {name} is now open to {address} only.</source>
            <translation>{name} 的 SSH 现在只对 {address} 开放。</translation>
        </message>
        <message>
            <source>The SSH rule was not changed</source>
            <translation>SSH 规则未更改</translation>
        </message>
    </context>
    <context>
        <name>Answers</name>
        <message>
            <source>a single GPU</source>
            <translation>单卡</translation>
        </message>
        <message>
            <source>tensor parallel</source>
            <translation>张量并行</translation>
        </message>
        <message>
            <source>FSDP full shard</source>
            <translation>FSDP 全分片</translation>
        </message>
        <message>
            <source>FSDP shard grad+optimizer</source>
            <translation>FSDP 分片梯度和优化器</translation>
        </message>
        <message>
            <source>plain data parallel</source>
            <translation>普通数据并行</translation>
        </message>
        <message>
            <source>ZeRO-{stage} with CPU offload</source>
            <translation>ZeRO-{stage} + CPU 卸载</translation>
        </message>
        <message>
            <source>ZeRO-{stage}</source>
            <translation>ZeRO-{stage}</translation>
        </message>
        <message>
            <source>QLoRA ({quantize} base, rank {rank})</source>
            <translation>QLoRA（{quantize} 基座，秩 {rank}）</translation>
        </message>
        <message>
            <source>LoRA (rank {rank})</source>
            <translation>LoRA（秩 {rank}）</translation>
        </message>
        <message>
            <source>{method} fits on one {gpu}: {used} of {capacity}.</source>
            <translation>{method} 可放入一张 {gpu}：{capacity} 中用 {used}。</translation>
        </message>
        <message>
            <source>Cheapest such offer: {machine} ({provider}).</source>
            <translation>最便宜的此类报价：{machine}（{provider}）。</translation>
        </message>
        <message>
            <source>Needs {used} per GPU. Pick an offer to compare.</source>
            <translation>每卡需要 {used}。请选择一个报价进行比较。</translation>
        </message>
        <message>
            <source>The {gpu} has no {precision} support: choose another offer or precision.</source>
            <translation>{gpu} 不支持 {precision}：请选择其他报价或精度。</translation>
        </message>
        <message>
            <source>Fits on one {gpu}: {used} of {capacity} ({free} free).</source>
            <translation>单张 {gpu} 可以放下：占用 {used} / {capacity}（剩余 {free}）。</translation>
        </message>
        <message>
            <source>Fits on {n} × {gpu}: {used} of {capacity} per GPU ({free} free).</source>
            <translation>{n} × {gpu} 可以放下：每卡占用 {used} / {capacity}（剩余 {free}）。</translation>
        </message>
        <message>
            <source>Does not fit on one {gpu}: needs {used}, has {capacity}.</source>
            <translation>单张 {gpu} 放不下：需要 {used}，只有 {capacity}。</translation>
        </message>
        <message>
            <source>Does not fit on {n} × {gpu}: needs {used} per GPU, has {capacity}.</source>
            <translation>{n} × {gpu} 放不下：每卡需要 {used}，只有 {capacity}。</translation>
        </message>
        <message>
            <source>Largest batch per GPU that fits: {batch}.</source>
            <translation>能放下的最大每卡批大小：{batch}。</translation>
        </message>
        <message>
            <source>Not even batch 1 fits on the {gpu}.</source>
            <translation>{gpu} 上连批大小 1 都放不下。</translation>
        </message>
        <message>
            <source>No plan with up to 512 × {gpu} fits.</source>
            <translation>最多 512 × {gpu} 也没有可行方案。</translation>
        </message>
        <message>
            <source>Fewest GPUs that fit: {count} × {gpu}, {strategy} ({used} per GPU).</source>
            <translation>最少所需 GPU：{count} × {gpu}，{strategy}（每卡 {used}）。</translation>
        </message>
    </context>
    <context>
        <name>BillingTray</name>
        <message>
            <source>starting</source>
            <translation>启动中</translation>
        </message>
        <message>
            <source>running</source>
            <translation>运行中</translation>
        </message>
        <message>
            <source>stopping</source>
            <translation>停止中</translation>
        </message>
        <message>
            <source>stopped</source>
            <translation>已停止</translation>
        </message>
        <message>
            <source>stopped (still billing)</source>
            <translation>已停止（仍在计费）</translation>
        </message>
        <message>
            <source>gpudesk: {n} machine(s) may be billing ({rate}/h)</source>
            <translation>gpudesk：{n} 台机器可能正在计费（{rate}/小时）</translation>
        </message>
        <message>
            <source>{name} — {provider} {type}, {state}, spent {spent}</source>
            <translation>{name} — {provider} {type}，{state}，已花费 {spent}</translation>
        </message>
        <message>
            <source>gpudesk: nothing is billing</source>
            <translation>gpudesk：没有正在计费的机器</translation>
        </message>
        <message>
            <source>Show gpudesk</source>
            <translation>显示 gpudesk</translation>
        </message>
        <message>
            <source>Quit</source>
            <translation>退出</translation>
        </message>
    </context>
    <context>
        <name>Bootstrap</name>
        <message>
            <source>NVIDIA driver {driver}, which supports CUDA up to {cuda}.</source>
            <translation>NVIDIA 驱动 {driver}，最高支持 CUDA {cuda}。</translation>
        </message>
        <message>
            <source>No NVIDIA driver: nvidia-smi was not found on {target}. Use a GPU image that has the driver (for example an AWS Deep Learning AMI), or install it (on Ubuntu: sudo ubuntu-drivers install, then reboot).</source>
            <translation>没有 NVIDIA 驱动：在 {target} 上找不到 nvidia-smi。请使用自带驱动的 GPU 镜像（例如 AWS Deep Learning AMI），或自行安装（Ubuntu：sudo ubuntu-drivers install，然后重启）。</translation>
        </message>
        <message>
            <source>nvidia-smi is installed on {target} but failed ({detail}). The driver is not loaded: reboot the machine, or reinstall the driver that matches its kernel.</source>
            <translation>{target} 上装有 nvidia-smi，但运行失败（{detail}）。驱动未加载：请重启机器，或重新安装与内核匹配的驱动。</translation>
        </message>
        <message>
            <source>nvidia-smi ran on {target}, but its output shows no driver version ({detail}).</source>
            <translation>nvidia-smi 在 {target} 上运行了，但输出中没有驱动版本（{detail}）。</translation>
        </message>
        <message>
            <source>{count} GPU(s): {names}.</source>
            <translation>{count} 块 GPU：{names}。</translation>
        </message>
        <message>
            <source>The NVIDIA driver on {target} sees no GPU. Check that the instance type has a GPU, or stop and start the machine.</source>
            <translation>{target} 上的 NVIDIA 驱动看不到任何 GPU。请确认实例类型带有 GPU，或停止后再启动机器。</translation>
        </message>
        <message>
            <source>CUDA toolkit (nvcc) {nvcc}.</source>
            <translation>CUDA 工具包（nvcc）{nvcc}。</translation>
        </message>
        <message>
            <source>No CUDA toolkit (nvcc) on {target}. PyTorch wheels bring their own CUDA runtime, so training works; only building CUDA extensions (flash-attn, apex) needs it.</source>
            <translation>{target} 上没有 CUDA 工具包（nvcc）。PyTorch 安装包自带 CUDA 运行时，训练不受影响；只有编译 CUDA 扩展（flash-attn、apex）才需要它。</translation>
        </message>
        <message>
            <source>nvcc {nvcc} is newer than the CUDA {cuda} the driver {driver} supports: CUDA extensions built with it may not load. Install a CUDA toolkit {cuda} or older, or use an image with a newer driver.</source>
            <translation>nvcc {nvcc} 比驱动 {driver} 支持的 CUDA {cuda} 更新：用它编译的 CUDA 扩展可能无法加载。请安装 CUDA {cuda} 或更早的工具包，或使用驱动更新的镜像。</translation>
        </message>
        <message>
            <source>Python {version} ({executable}).</source>
            <translation>Python {version}（{executable}）。</translation>
        </message>
        <message>
            <source>No Python on {target} ('{python}' was not found). Install it (on Ubuntu: sudo apt install python3 python3-venv), or give the right one with --python.</source>
            <translation>{target} 上没有 Python（找不到“{python}”）。请安装（Ubuntu：sudo apt install python3 python3-venv），或用 --python 指定正确的解释器。</translation>
        </message>
        <message>
            <source>'{python}' on {target} did not run ({detail}).</source>
            <translation>{target} 上的“{python}”无法运行（{detail}）。</translation>
        </message>
        <message>
            <source>Python {version} is older than current PyTorch supports ({minimum} or newer is needed). Use a newer python3, or an image that has one.</source>
            <translation>Python {version} 太旧，当前 PyTorch 不支持（需要 {minimum} 或更新）。请使用更新的 python3，或带有新版 Python 的镜像。</translation>
        </message>
        <message>
            <source>torch {torch} (built for CUDA {torch_cuda}) sees {devices} GPU(s).</source>
            <translation>torch {torch}（为 CUDA {torch_cuda} 构建）识别到 {devices} 块 GPU。</translation>
        </message>
        <message>
            <source>torch {torch}, a build without CUDA (this machine has no NVIDIA driver).</source>
            <translation>torch {torch}，不含 CUDA 的版本（这台机器没有 NVIDIA 驱动）。</translation>
        </message>
        <message>
            <source>torch is not installed for {python} ({detail}). Add torch to the project's requirements.txt, or install it: {install}.</source>
            <translation>{python} 没有安装 torch（{detail}）。请把 torch 加入项目的 requirements.txt，或安装：{install}。</translation>
        </message>
        <message>
            <source>torch {torch} is a CPU-only build, so it cannot use the {gpus} GPU(s): install a CUDA build ({install}).</source>
            <translation>torch {torch} 是仅 CPU 的版本，无法使用这 {gpus} 块 GPU：请安装 CUDA 版本（{install}）。</translation>
        </message>
        <message>
            <source>torch {torch} is built for CUDA {torch_cuda} but the driver {driver} supports up to CUDA {cuda}: install a torch built for {tag} ({install}) or use an image with a newer driver.</source>
            <translation>torch {torch} 为 CUDA {torch_cuda} 构建，但驱动 {driver} 最高只支持 CUDA {cuda}：请安装为 {tag} 构建的 torch（{install}），或使用驱动更新的镜像。</translation>
        </message>
        <message>
            <source>torch {torch} is built for CUDA {torch_cuda} but the driver {driver} supports only CUDA {cuda}, older than any current PyTorch build: use an image with a newer driver (525 or newer), or update the driver.</source>
            <translation>torch {torch} 为 CUDA {torch_cuda} 构建，但驱动 {driver} 只支持 CUDA {cuda}，比所有当前 PyTorch 版本都旧：请使用驱动更新（525 或更新）的镜像，或升级驱动。</translation>
        </message>
        <message>
            <source>torch {torch} is built for CUDA {torch_cuda}, newer than the CUDA {cuda} of driver {driver}; it runs through CUDA minor-version compatibility, but some kernels may fail. For a perfect match install a torch built for {tag} ({install}).</source>
            <translation>torch {torch} 为 CUDA {torch_cuda} 构建，比驱动 {driver} 的 CUDA {cuda} 更新；依靠 CUDA 小版本兼容可以运行，但部分内核可能失败。要完全匹配，请安装为 {tag} 构建的 torch（{install}）。</translation>
        </message>
        <message>
            <source>torch {torch} (CUDA {torch_cuda}) cannot use the GPU: torch.cuda.is_available() is False{detail}. Install a torch built for {tag} ({install}), or reboot if the driver was just installed.</source>
            <translation>torch {torch}（CUDA {torch_cuda}）无法使用 GPU：torch.cuda.is_available() 为 False{detail}。请安装为 {tag} 构建的 torch（{install}），如果刚装好驱动，请重启。</translation>
        </message>
        <message>
            <source>torch sees {devices} GPU(s) but the driver lists {gpus}; check CUDA_VISIBLE_DEVICES on {target}.</source>
            <translation>torch 识别到 {devices} 块 GPU，而驱动列出 {gpus} 块；请检查 {target} 上的 CUDA_VISIBLE_DEVICES。</translation>
        </message>
        <message>
            <source>The checks could not run on {target} (exit status {status}): {detail}</source>
            <translation>无法在 {target} 上运行检查（退出状态 {status}）：{detail}</translation>
        </message>
        <message>
            <source>{project} has no requirements.txt: nothing to install.</source>
            <translation>{project} 没有 requirements.txt：无需安装。</translation>
        </message>
        <message>
            <source>The requirements are already installed in {venv} (requirements.txt has not changed): nothing to do.</source>
            <translation>依赖已安装在 {venv} 中（requirements.txt 未改变）：无需操作。</translation>
        </message>
        <message>
            <source>Installed requirements.txt into {venv} in {seconds} s.</source>
            <translation>已在 {seconds} 秒内把 requirements.txt 安装到 {venv}。</translation>
        </message>
        <message>
            <source>Creating a virtual environment in {venv} (it sees the machine's own packages, such as a preinstalled torch).</source>
            <translation>正在 {venv} 创建虚拟环境（可使用机器自带的包，例如预装的 torch）。</translation>
        </message>
        <message>
            <source>Installing requirements.txt with pip.</source>
            <translation>正在用 pip 安装 requirements.txt。</translation>
        </message>
        <message>
            <source>Could not create a virtual environment in {venv} on {target}: {detail}. Install the venv module (on Ubuntu: sudo apt install python3-venv) and try again.</source>
            <translation>无法在 {target} 的 {venv} 创建虚拟环境：{detail}。请安装 venv 模块（Ubuntu：sudo apt install python3-venv）后重试。</translation>
        </message>
        <message>
            <source>Installing requirements.txt on {target} failed (pip exit status {status}): {detail}. Check the package names and versions in requirements.txt, and that the machine can reach the package index.</source>
            <translation>在 {target} 上安装 requirements.txt 失败（pip 退出状态 {status}）：{detail}。请检查 requirements.txt 中的包名和版本，并确认机器能访问软件包索引。</translation>
        </message>
        <message>
            <source>The install on {target} ended without a result (exit status {status}): {detail}</source>
            <translation>{target} 上的安装没有结果就结束了（退出状态 {status}）：{detail}</translation>
        </message>
    </context>
    <context>
        <name>Budget</name>
        <message>
            <source>Budget {budget}: {hours} hours of the machine at {price}/h (the default in Preferences).</source>
            <translation>预算 {budget}：这台机器按 {price}/小时计的 {hours} 小时费用（偏好设置中的默认值）。</translation>
        </message>
        <message>
            <source>Budget: {hours} hours of the machine at the price the cloud quotes before launching (the default in Preferences).</source>
            <translation>预算：这台机器按云在启动前的报价计的 {hours} 小时费用（偏好设置中的默认值）。</translation>
        </message>
        <message>
            <source>Budget {budget} (the default budget per machine in Preferences).</source>
            <translation>预算 {budget}（偏好设置中的单机默认预算）。</translation>
        </message>
    </context>
    <context>
        <name>BudgetAlerts</name>
        <message>
            <source>stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>terminate</source>
            <translation>销毁</translation>
        </message>
        <message>
            <source>Budget reached: gpudesk could not {action} {machine} yet ({tries} tries): {why} It tries again at the next check.</source>
            <translation>已达预算：gpudesk 还未能{action} {machine}（已尝试 {tries} 次）：{why} 下次检查时会再试。</translation>
        </message>
        <message>
            <source>not tried yet.</source>
            <translation>尚未尝试。</translation>
        </message>
        <message>
            <source>This desktop has no system tray: budget alerts show in the gpudesk window only.</source>
            <translation>此桌面没有系统托盘：预算提醒只在 gpudesk 窗口中显示。</translation>
        </message>
        <message>
            <source>Budget {threshold}% reached</source>
            <translation>预算已达 {threshold}%</translation>
        </message>
        <message>
            <source>This month's spend is {spent} of the {cap} budget.</source>
            <translation>本月已花费 {spent}，预算为 {cap}。</translation>
        </message>
        <message>
            <source>{machine} has cost {spent} of its {cap} budget.</source>
            <translation>{machine} 已花费 {spent}，其预算为 {cap}。</translation>
        </message>
        <message>
            <source>Stopping {n} machine(s).</source>
            <translation>正在停止 {n} 台机器。</translation>
        </message>
        <message>
            <source>Terminating {n} machine(s).</source>
            <translation>正在销毁 {n} 台机器。</translation>
        </message>
        <message>
            <source>Nothing is stopped: this budget only warns.</source>
            <translation>不会停止任何机器：此预算只发出提醒。</translation>
        </message>
    </context>
    <context>
        <name>BudgetBanner</name>
        <message>
            <source>Dismiss</source>
            <translation>关闭</translation>
        </message>
    </context>
    <context>
        <name>BudgetDialog</name>
        <message>
            <source>Change budget</source>
            <translation>修改预算</translation>
        </message>
        <message>
            <source>Budget</source>
            <translation>预算</translation>
        </message>
        <message>
            <source>At the budget</source>
            <translation>达到预算时</translation>
        </message>
        <message>
            <source>stop the machine</source>
            <translation>停止机器</translation>
        </message>
        <message>
            <source>terminate it</source>
            <translation>销毁机器</translation>
        </message>
        <message>
            <source>Close</source>
            <translation>关闭</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>{amount}, then {action}</source>
            <translation>{amount}，然后{action}</translation>
        </message>
        <message>
            <source>{name} ({type}, {cloud_id}). Budget now: {now}.</source>
            <translation>{name}（{type}，{cloud_id}）。当前预算：{now}。</translation>
        </message>
        <message>
            <source>stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>terminate</source>
            <translation>销毁</translation>
        </message>
        <message>
            <source>warn</source>
            <translation>提醒</translation>
        </message>
        <message>
            <source>Budget: “{text}” is not an amount; type one like 50.</source>
            <translation>预算：“{text}”不是金额；请输入类似 50 的数字。</translation>
        </message>
        <message>
            <source>Budget: {why}</source>
            <translation>预算：{why}</translation>
        </message>
        <message>
            <source>Changing the budget: the ledger, then the cloud, then the machine's agent…</source>
            <translation>正在修改预算：先账本，再云端，最后是机器上的代理…</translation>
        </message>
        <message>
            <source>The budget was not changed: {why}</source>
            <translation>预算未修改：{why}</translation>
        </message>
        <message>
            <source>Ledger: {amount}, then {action} (was {was}).</source>
            <translation>账本：{amount}，然后{action}（原为 {was}）。</translation>
        </message>
        <message>
            <source>gpudesk: {spent} spent of {cap} ({percent:.0f}%); it {action}s the machine at the budget while it runs.</source>
            <translation>gpudesk：已花费 {spent}，预算 {cap}（{percent:.0f}%）；gpudesk 运行期间，达到预算时会{action}这台机器。</translation>
        </message>
        <message>
            <source>Agent: {says}</source>
            <translation>代理：{says}</translation>
        </message>
        <message>
            <source>Cloud: {says}</source>
            <translation>云端：{says}</translation>
        </message>
    </context>
    <context>
        <name>Catalog</name>
        <message>
            <source>Tencent Cloud</source>
            <translation>腾讯云</translation>
        </message>
        <message>
            <source>Alibaba Cloud</source>
            <translation>阿里云</translation>
        </message>
    </context>
    <context>
        <name>CloudAccountBox</name>
        <message>
            <source>Access key ID</source>
            <translation>访问密钥 ID</translation>
        </message>
        <message>
            <source>SecretId</source>
            <translation>SecretId</translation>
        </message>
        <message>
            <source>Secret access key</source>
            <translation>秘密访问密钥</translation>
        </message>
        <message>
            <source>SecretKey</source>
            <translation>SecretKey</translation>
        </message>
        <message>
            <source>Session token (optional)</source>
            <translation>会话令牌（可选）</translation>
        </message>
        <message>
            <source>Or import from ~/.aws profile</source>
            <translation>或从 ~/.aws 配置文件导入</translation>
        </message>
        <message>
            <source>AccessKey ID</source>
            <translation>AccessKey ID</translation>
        </message>
        <message>
            <source>AccessKey secret</source>
            <translation>AccessKey Secret</translation>
        </message>
        <message>
            <source>Or import from ~/.aliyun profile</source>
            <translation>或从 ~/.aliyun 配置导入</translation>
        </message>
        <message>
            <source>Import</source>
            <translation>导入</translation>
        </message>
        <message>
            <source>Verify and save</source>
            <translation>验证并保存</translation>
        </message>
        <message>
            <source>Remove keys</source>
            <translation>移除密钥</translation>
        </message>
        <message>
            <source>kept only in the system keyring</source>
            <translation>只保存在系统密钥环中</translation>
        </message>
        <message>
            <source>No keys yet. They are verified before they are saved.</source>
            <translation>还没有密钥。密钥在保存前会先验证。</translation>
        </message>
        <message>
            <source>Keys {key} saved, not verified.</source>
            <translation>密钥 {key} 已保存，未验证。</translation>
        </message>
        <message>
            <source>Keys {key} are valid: account {account}, verified {when}.</source>
            <translation>密钥 {key} 有效：账号 {account}，验证于 {when}。</translation>
        </message>
        <message>
            <source>Keys {key} are valid, verified {when}; {provider} did not return the account id.</source>
            <translation>密钥 {key} 有效，验证于 {when}；{provider} 没有返回账号 ID。</translation>
        </message>
        <message>
            <source>Whether they may launch machines could not be checked; verify again later.</source>
            <translation>无法检查这些密钥能否创建机器；请稍后重新验证。</translation>
        </message>
        <message>
            <source>They may not launch machines; ask for launch permission.</source>
            <translation>这些密钥可能无法启动机器；请申请启动权限。</translation>
        </message>
        <message>
            <source>Enter both the key ID and the secret.</source>
            <translation>请同时填写密钥 ID 和密钥。</translation>
        </message>
        <message>
            <source>Checking the keys with {provider}…</source>
            <translation>正在向 {provider} 验证密钥…</translation>
        </message>
        <message>
            <source>The keys were not saved</source>
            <translation>密钥未保存</translation>
        </message>
        <message>
            <source>Remove the {provider} keys from the keyring? Machines keep running; gpudesk can no longer see or stop them.</source>
            <translation>从系统密钥环中移除 {provider} 的密钥？机器会继续运行；gpudesk 将无法再看到或停止它们。</translation>
        </message>
    </context>
    <context>
        <name>CrashDialog</name>
        <message>
            <source>gpudesk hit a problem</source>
            <translation>gpudesk 遇到问题</translation>
        </message>
        <message>
            <source>Something went wrong inside gpudesk. It keeps running, but the last action may not have finished. Please copy this report into an issue; keys and passwords that looked like secrets have been removed from it.</source>
            <translation>gpudesk 内部出错。程序仍在运行，但上一个操作可能没有完成。请将此报告复制到问题反馈中；看起来像密钥和密码的内容已被移除。</translation>
        </message>
        <message>
            <source>&amp;Copy report</source>
            <translation>复制报告(&amp;C)</translation>
        </message>
        <message>
            <source>Open &amp;log folder</source>
            <translation>打开日志文件夹(&amp;L)</translation>
        </message>
        <message>
            <source>The log folder is open in your file manager.</source>
            <translation>日志文件夹已在文件管理器中打开。</translation>
        </message>
        <message>
            <source>No file manager opened the log folder. Open it yourself:</source>
            <translation>没有文件管理器打开日志文件夹。请自行打开：</translation>
        </message>
        <message>
            <source>gpudesk's log</source>
            <translation>gpudesk 日志</translation>
        </message>
        <message>
            <source>Folder: {folder}
Log file: {file}</source>
            <translation>文件夹：{folder}
日志文件：{file}</translation>
        </message>
        <message>
            <source>Copy the path</source>
            <translation>复制路径</translation>
        </message>
    </context>
    <context>
        <name>Credentials</name>
        <message>
            <source>No usable system keyring was found, and gpudesk never stores keys in a file. {how}</source>
            <translation>没有找到可用的系统密钥环，而 gpudesk 从不把密钥保存在文件中。{how}</translation>
        </message>
        <message>
            <source>Install and start a Secret Service keyring (GNOME Keyring or KWallet), for example: sudo apt install gnome-keyring, then log in to a desktop session again.</source>
            <translation>请安装并启动一个 Secret Service 密钥环（GNOME Keyring 或 KWallet），例如：sudo apt install gnome-keyring，然后重新登录桌面会话。</translation>
        </message>
        <message>
            <source>Make sure the system keychain (Windows Credential Manager or the macOS Keychain) is available to your user.</source>
            <translation>请确认当前用户可以使用系统钥匙串（Windows 凭据管理器或 macOS 钥匙串）。</translation>
        </message>
        <message>
            <source>The system keyring refused the request ({reason}). Unlock it and try again.</source>
            <translation>系统密钥环拒绝了请求（{reason}）。请解锁后重试。</translation>
        </message>
        <message>
            <source>The {what} is empty.</source>
            <translation>{what} 为空。</translation>
        </message>
        <message>
            <source>No AWS profile '{profile}' with an access key was found in {files}.</source>
            <translation>在 {files} 中没有找到带访问密钥的 AWS 配置 '{profile}'。</translation>
        </message>
        <message>
            <source>No Alibaba Cloud profile '{profile}' with an AccessKey (mode AK or StsToken) was found in {file}.</source>
            <translation>在 {file} 中没有找到带 AccessKey（模式 AK 或 StsToken）的阿里云配置“{profile}”。</translation>
        </message>
    </context>
    <context>
        <name>DashboardPage</name>
        <message>
            <source>Machine</source>
            <translation>机器</translation>
        </message>
        <message>
            <source>15 min</source>
            <translation>15 分钟</translation>
        </message>
        <message>
            <source>1 hour</source>
            <translation>1 小时</translation>
        </message>
        <message>
            <source>6 hours</source>
            <translation>6 小时</translation>
        </message>
        <message>
            <source>24 hours</source>
            <translation>24 小时</translation>
        </message>
        <message>
            <source>Follow live</source>
            <translation>跟随实时</translation>
        </message>
        <message>
            <source>GPU</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Name</source>
            <translation>名称</translation>
        </message>
        <message>
            <source>Util</source>
            <translation>利用率</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>显存</translation>
        </message>
        <message>
            <source>Temp</source>
            <translation>温度</translation>
        </message>
        <message>
            <source>Power</source>
            <translation>功耗</translation>
        </message>
        <message>
            <source>PID</source>
            <translation>PID</translation>
        </message>
        <message>
            <source>Process</source>
            <translation>进程</translation>
        </message>
        <message>
            <source>GPU memory</source>
            <translation>显存</translation>
        </message>
        <message>
            <source>Processes</source>
            <translation>进程</translation>
        </message>
        <message>
            <source>Spend</source>
            <translation>花费</translation>
        </message>
        <message>
            <source>No NVIDIA GPU or driver on this machine</source>
            <translation>这台机器上没有 NVIDIA GPU 或驱动</translation>
        </message>
        <message>
            <source>no data yet</source>
            <translation>尚无数据</translation>
        </message>
        <message>
            <source>last sample {n} s ago</source>
            <translation>最近采样于 {n} 秒前</translation>
        </message>
        <message>
            <source>{v:.1f} GiB</source>
            <translation>{v:.1f} GiB</translation>
        </message>
        <message>
            <source>GiB</source>
            <translation>GiB</translation>
        </message>
        <message>
            <source>{v:.0f} W</source>
            <translation>{v:.0f} W</translation>
        </message>
        <message>
            <source>W</source>
            <translation>W</translation>
        </message>
        <message>
            <source>{:.0f} %</source>
            <translation>{:.0f} %</translation>
        </message>
        <message>
            <source>{:.0f} °C</source>
            <translation>{:.0f} °C</translation>
        </message>
        <message>
            <source>Latest values</source>
            <translation>最新数值</translation>
        </message>
        <message>
            <source>Latest values ({time})</source>
            <translation>最新数值（{time}）</translation>
        </message>
        <message>
            <source>Values at {time}</source>
            <translation>{time} 的数值</translation>
        </message>
        <message>
            <source>No sample at {time}</source>
            <translation>{time} 没有采样</translation>
        </message>
        <message>
            <source>{:,.0f} MiB</source>
            <translation>{:,.0f} MiB</translation>
        </message>
        <message>
            <source>No spend data yet</source>
            <translation>尚无花费数据</translation>
        </message>
        <message>
            <source>Rate: {rate} per hour</source>
            <translation>费率：每小时 {rate}</translation>
        </message>
        <message>
            <source>This run so far: {cost} (compute only)</source>
            <translation>本次运行至今：{cost}（仅计算费用）</translation>
        </message>
        <message>
            <source>This run so far: {cost}</source>
            <translation>本次运行至今：{cost}</translation>
        </message>
        <message>
            <source>gpudesk has no disk or traffic prices for this provider (Tencent Cloud's depend on region and disk type), so only compute is counted.</source>
            <translation>gpudesk 没有该云厂商的云硬盘和流量价格（腾讯云的价格随地域和硬盘类型而不同），因此只计入计算费用。</translation>
        </message>
        <message>
            <source>No end time set</source>
            <translation>未设置结束时间</translation>
        </message>
        <message>
            <source>By the end ({time}): {cost}</source>
            <translation>到结束时（{time}）：{cost}</translation>
        </message>
        <message>
            <source>No budget cap</source>
            <translation>无预算上限</translation>
        </message>
        <message>
            <source>Cap {cap} reached</source>
            <translation>已达上限 {cap}</translation>
        </message>
        <message>
            <source>Cap {cap} at {time}</source>
            <translation>将于 {time} 达到上限 {cap}</translation>
        </message>
        <message>
            <source>Cap {cap} not reached by the end</source>
            <translation>到结束时不会达到上限 {cap}</translation>
        </message>
        <message>
            <source>Cap {cap}: {left} left</source>
            <translation>上限 {cap}：还剩 {left}</translation>
        </message>
    </context>
    <context>
        <name>DataPage</name>
        <message>
            <source>Copy {name} to another region</source>
            <translation>将 {name} 复制到另一个地域</translation>
        </message>
        <message>
            <source>Dataset {name} is in {store} ({region}). A bucket of yours in the machine's region receives a copy, made by the cloud (nothing passes through this computer); its cost is said before anything moves.</source>
            <translation>数据集 {name} 位于 {store}（{region}）。由云端在您位于机器所在地域的存储桶中制作一份副本（数据不经过这台电脑）；在传输任何数据之前会先说明费用。</translation>
        </message>
        <message>
            <source>s3://bucket/prefix</source>
            <translation>s3://bucket/prefix</translation>
        </message>
        <message>
            <source>its region (COS, OSS; AWS's answer says it)</source>
            <translation>其地域（COS、OSS 需要；AWS 的应答会给出）</translation>
        </message>
        <message>
            <source>Bucket:</source>
            <translation>存储桶：</translation>
        </message>
        <message>
            <source>Region:</source>
            <translation>地域：</translation>
        </message>
        <message>
            <source>Say the cost…</source>
            <translation>说明费用…</translation>
        </message>
        <message>
            <source>Type the bucket to copy to: s3://bucket/prefix.</source>
            <translation>请输入要复制到的存储桶：s3://bucket/prefix。</translation>
        </message>
        <message>
            <source>Nothing was copied: {why}</source>
            <translation>未复制任何内容：{why}</translation>
        </message>
        <message>
            <source>Cancel the copy</source>
            <translation>取消复制</translation>
        </message>
        <message>
            <source>Checking the bucket {uri} and the price of the copy…</source>
            <translation>正在检查存储桶 {uri} 和复制的价格…</translation>
        </message>
        <message>
            <source>Copying {name}…</source>
            <translation>正在复制 {name}…</translation>
        </message>
        <message>
            <source>Cancelling…</source>
            <translation>正在取消…</translation>
        </message>
        <message>
            <source>{done} of {total} copied</source>
            <translation>已复制 {done}，共 {total}</translation>
        </message>
        <message>
            <source>The copy stopped: {why}</source>
            <translation>复制已停止：{why}</translation>
        </message>
        <message>
            <source>price not known</source>
            <translation>价格未知</translation>
        </message>
        <message>
            <source>Nothing was removed: {why}</source>
            <translation>未删除任何内容：{why}</translation>
        </message>
        <message>
            <source>Datasets are pushed once from this computer to a bucket; every machine fetches them from there (Run page: Data; gpudesk run --data NAME).</source>
            <translation>数据集从这台电脑推送到存储桶一次；每台机器都从那里获取（运行页面：数据；gpudesk run --data NAME）。</translation>
        </message>
        <message>
            <source>Name</source>
            <translation>名称</translation>
        </message>
        <message>
            <source>Size</source>
            <translation>大小</translation>
        </message>
        <message>
            <source>Files</source>
            <translation>文件</translation>
        </message>
        <message>
            <source>Region</source>
            <translation>地域</translation>
        </message>
        <message>
            <source>Source</source>
            <translation>来源</translation>
        </message>
        <message>
            <source>Version</source>
            <translation>版本</translation>
        </message>
        <message>
            <source>Storage a month</source>
            <translation>每月存储费用</translation>
        </message>
        <message>
            <source>Refresh</source>
            <translation>刷新</translation>
        </message>
        <message>
            <source>Remove…</source>
            <translation>删除…</translation>
        </message>
        <message>
            <source>Copy to another region…</source>
            <translation>复制到另一个地域…</translation>
        </message>
        <message>
            <source>Copy the chosen dataset bucket-to-bucket into a bucket of yours in another region, for machines there; its cost is said first (gpudesk data copy).</source>
            <translation>将所选数据集从存储桶直接复制到您在另一个地域的存储桶，供那里的机器使用；会先说明费用（gpudesk data copy）。</translation>
        </message>
        <message>
            <source>No dataset is known here yet: push a folder below, or type the bucket that holds yours in the Bucket field and press Refresh.</source>
            <translation>这里还没有已知的数据集：请在下方推送一个文件夹，或在“存储桶”字段中输入存放您数据集的存储桶，然后点击“刷新”。</translation>
        </message>
        <message>
            <source>Listing…</source>
            <translation>正在列出…</translation>
        </message>
        <message>
            <source>The datasets in {store} could not be listed: {why}</source>
            <translation>无法列出 {store} 中的数据集：{why}</translation>
        </message>
        <message>
            <source>{n} dataset(s), {size} in {stores}.</source>
            <translation>{n} 个数据集，共 {size}，位于 {stores}。</translation>
        </message>
        <message>
            <source>No dataset in {stores} yet: push a folder below.</source>
            <translation>{stores} 中还没有数据集：请在下方推送一个文件夹。</translation>
        </message>
        <message>
            <source>The datasets could not be listed: {why}</source>
            <translation>无法列出数据集：{why}</translation>
        </message>
        <message>
            <source>Remove dataset {name} ({files} files, {size}) from {store}?</source>
            <translation>从 {store} 删除数据集 {name}（{files} 个文件，{size}）？</translation>
        </message>
        <message>
            <source>Remove the dataset?</source>
            <translation>删除该数据集？</translation>
        </message>
        <message>
            <source>Remove</source>
            <translation>删除</translation>
        </message>
        <message>
            <source>nothing removed</source>
            <translation>未删除任何内容</translation>
        </message>
        <message>
            <source>Removing {name}…</source>
            <translation>正在删除 {name}…</translation>
        </message>
        <message>
            <source>removed {name} ({gone} stored files no dataset uses any more)</source>
            <translation>已删除 {name}（{gone} 个不再被任何数据集使用的存储文件）</translation>
        </message>
        <message>
            <source>Hugging Face token</source>
            <translation>Hugging Face 令牌</translation>
        </message>
        <message>
            <source>For gated Hub datasets (Run page: Data hf:ORG/NAME). It is kept in the keyring only and reaches a machine as a short-lived file, never on a command line (gpudesk data hf-token).</source>
            <translation>用于受限的 Hub 数据集（运行页面：数据 hf:ORG/NAME）。它只保存在密钥环中，以短期文件的形式到达机器，绝不出现在命令行中（gpudesk data hf-token）。</translation>
        </message>
        <message>
            <source>paste a token to save it</source>
            <translation>粘贴令牌以保存</translation>
        </message>
        <message>
            <source>Save</source>
            <translation>保存</translation>
        </message>
        <message>
            <source>Forget</source>
            <translation>忘记</translation>
        </message>
        <message>
            <source>a token is saved</source>
            <translation>已保存令牌</translation>
        </message>
        <message>
            <source>no token saved</source>
            <translation>未保存令牌</translation>
        </message>
        <message>
            <source>the Hugging Face token is in the keyring; runs reading a Hub dataset pass it to the machine as a short-lived file</source>
            <translation>Hugging Face 令牌已存入密钥环；读取 Hub 数据集的运行会以短期文件的形式把它传给机器</translation>
        </message>
        <message>
            <source>the Hugging Face token was removed from the keyring</source>
            <translation>Hugging Face 令牌已从密钥环中删除</translation>
        </message>
        <message>
            <source>Push a folder</source>
            <translation>推送文件夹</translation>
        </message>
        <message>
            <source>Folder:</source>
            <translation>文件夹：</translation>
        </message>
        <message>
            <source>Name:</source>
            <translation>名称：</translation>
        </message>
        <message>
            <source>Choose…</source>
            <translation>选择…</translation>
        </message>
        <message>
            <source>the folder to push</source>
            <translation>要推送的文件夹</translation>
        </message>
        <message>
            <source>the dataset's name, e.g. imagenet-val (gpudesk run --data NAME)</source>
            <translation>数据集名称，例如 imagenet-val（gpudesk run --data 名称）</translation>
        </message>
        <message>
            <source>s3://bucket/prefix, cos:// or oss:// with the region</source>
            <translation>s3://存储桶/前缀，cos:// 或 oss:// 需同时填写地域</translation>
        </message>
        <message>
            <source>region (COS, OSS)</source>
            <translation>地域（COS、OSS）</translation>
        </message>
        <message>
            <source>The bucket the dataset goes to; every machine fetches it from there. It is checked with the account's keys before anything is sent.</source>
            <translation>数据集要存入的存储桶；每台机器都从那里获取。发送任何内容之前，会先用账号的密钥检查它。</translation>
        </message>
        <message>
            <source>Push</source>
            <translation>推送</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>The folder to push</source>
            <translation>要推送的文件夹</translation>
        </message>
        <message>
            <source>Choose the folder to push.</source>
            <translation>请选择要推送的文件夹。</translation>
        </message>
        <message>
            <source>No bucket to push to: type one here (s3://bucket/prefix; cos:// or oss:// with the region).</source>
            <translation>没有可推送到的存储桶：请在此输入一个（s3://存储桶/前缀；cos:// 或 oss:// 需同时填写地域）。</translation>
        </message>
        <message>
            <source>Checking the bucket {uri}…</source>
            <translation>正在检查存储桶 {uri}…</translation>
        </message>
        <message>
            <source>, {seconds} s left</source>
            <translation>，剩余 {seconds} 秒</translation>
        </message>
        <message>
            <source>{done} of {total} sent ({files} files, {speed}/s{left}); {skipped} files already in the bucket</source>
            <translation>已发送 {done} / {total}（{files} 个文件，{speed}/秒{left}）；{skipped} 个文件已在存储桶中</translation>
        </message>
        <message>
            <source>Pushing…</source>
            <translation>正在推送…</translation>
        </message>
        <message>
            <source>{name}: {files} files, {size} in {uri} ({region}), version {version}</source>
            <translation>{name}：{files} 个文件，{size}，位于 {uri}（{region}），版本 {version}</translation>
        </message>
        <message>
            <source>Nothing was sent.</source>
            <translation>未发送任何内容。</translation>
        </message>
    </context>
    <context>
        <name>DiskNeeded</name>
        <message>
            <source>Disk</source>
            <translation>磁盘</translation>
        </message>
        <message>
            <source>Dataset</source>
            <translation>数据集</translation>
        </message>
        <message>
            <source>Data size (GB)</source>
            <translation>数据大小（GB）</translation>
        </message>
        <message>
            <source>Checkpoints kept</source>
            <translation>保留的检查点</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>not pushed yet: its size</source>
            <translation>尚未上传：填写其大小</translation>
        </message>
        <message>
            <source>e.g. 42</source>
            <translation>例如 42</translation>
        </message>
        <message>
            <source>How many checkpoints the script keeps on the machine's disk; one more is there while the next is written.</source>
            <translation>脚本在机器磁盘上保留的检查点个数；写入下一个时会多占一个。</translation>
        </message>
        <message>
            <source>Reading the size of {name} from its bucket…</source>
            <translation>正在从存储桶读取 {name} 的大小…</translation>
        </message>
    </context>
    <context>
        <name>DiskPlan</name>
        <message>
            <source>data {data} + {count} checkpoints × {checkpoint} ({kept} kept, 1 being written) + environment {environment} (an estimate) + headroom {headroom} = {total}</source>
            <translation>数据 {data} + {count} 个检查点 × {checkpoint}（保留 {kept} 个，另有 1 个正在写入）+ 环境 {environment}（估计值）+ 余量 {headroom} = {total}</translation>
        </message>
        <message>
            <source>{count} checkpoints × {checkpoint} ({kept} kept, 1 being written) + environment {environment} (an estimate) + headroom {headroom} = {total}</source>
            <translation>{count} 个检查点 × {checkpoint}（保留 {kept} 个，另有 1 个正在写入）+ 环境 {environment}（估计值）+ 余量 {headroom} = {total}</translation>
        </message>
        <message>
            <source>data {data} + environment {environment} (an estimate) + headroom {headroom} = {total}</source>
            <translation>数据 {data} + 环境 {environment}（估计值）+ 余量 {headroom} = {total}</translation>
        </message>
        <message>
            <source>environment {environment} (an estimate) + headroom {headroom} = {total}</source>
            <translation>环境 {environment}（估计值）+ 余量 {headroom} = {total}</translation>
        </message>
        <message>
            <source>Disk needed: {parts}</source>
            <translation>所需磁盘：{parts}</translation>
        </message>
        <message>
            <source>A {disk_gb} GB disk is too small for this job: {parts}. Choose a bigger disk (at least {minimum} GB).</source>
            <translation>{disk_gb} GB 的磁盘装不下这个任务：{parts}。请选择更大的磁盘（至少 {minimum} GB）。</translation>
        </message>
        <message>
            <source>Checkpoints kept must be a whole number from 0 to {maximum} (got {value}).</source>
            <translation>保留的检查点数必须是 0 到 {maximum} 之间的整数（收到 {value}）。</translation>
        </message>
        <message>
            <source>A size must be a number of GB of at least 0 (got {value}).</source>
            <translation>大小必须是不小于 0 的 GB 数（收到 {value}）。</translation>
        </message>
    </context>
    <context>
        <name>GpuPlots</name>
        <message>
            <source>Utilisation (%)</source>
            <translation>利用率（%）</translation>
        </message>
        <message>
            <source>Memory (GiB)</source>
            <translation>显存（GiB）</translation>
        </message>
        <message>
            <source>Temperature (°C)</source>
            <translation>温度（°C）</translation>
        </message>
        <message>
            <source>Power (W)</source>
            <translation>功耗（W）</translation>
        </message>
        <message>
            <source>Local time</source>
            <translation>本地时间</translation>
        </message>
    </context>
    <context>
        <name>Guard</name>
        <message>
            <source>At {budget} the machine's agent also asks {cloud} itself to {action} the machine, with a role that may only do that (no keys on the machine), even with gpudesk closed.</source>
            <translation>花费达到 {budget} 时，机器上的代理还会凭一个只能做这件事的角色（机器上没有任何密钥）直接请{cloud}{action}这台机器，即使 gpudesk 已关闭也是如此。</translation>
        </message>
        <message>
            <source>you chose no role</source>
            <translation>您选择了不使用角色</translation>
        </message>
        <message>
            <source>This machine has no role to stop itself ({why}): with gpudesk closed, its agent cannot ask {cloud} to stop the bill.</source>
            <translation>这台机器没有可自行停止的角色（{why}）：gpudesk 关闭时，机器上的代理无法请{cloud}停止计费。</translation>
        </message>
        <message>
            <source>No budget: nothing stops this machine's bill but you.</source>
            <translation>没有预算：除了你自己，没有什么会停止这台机器的计费。</translation>
        </message>
        <message>
            <source>At {budget} {cloud} itself terminates this machine at {time} UTC, even if gpudesk and the machine's agent are gone.</source>
            <translation>花费达到 {budget} 时，{cloud}会在 UTC 时间 {time} 自行销毁这台机器，即使 gpudesk 和机器上的代理都已不在。</translation>
        </message>
        <message>
            <source>Alibaba Cloud releases a machine no sooner than {minutes} minutes after its release time is set (AutoReleaseTime at least 30 minutes ahead, plus a minute for the clock), so this budget of {budget}, which lasts under {minutes} minutes, can run up to {most} before the cloud ends it.</source>
            <translation>阿里云在设置释放时间后最早 {minutes} 分钟才会释放机器（AutoReleaseTime 至少在 30 分钟之后，另加 1 分钟时钟余量），因此这份 {budget} 的预算虽然不足 {minutes} 分钟，机器仍可能运行到花费 {most} 才被云端结束。</translation>
        </message>
        <message>
            <source>At {budget} the machine's agent shuts it down and EC2 terminates it (shutdown behaviour: terminate), even with gpudesk closed; nothing bills after that.</source>
            <translation>花费达到 {budget} 时，机器上的代理会将其关机，EC2 随即销毁它（关机行为：终止），即使 gpudesk 已关闭也是如此；此后不再产生任何费用。</translation>
        </message>
        <message>
            <source>At {budget} the machine's agent shuts it down and EC2 stops it (shutdown behaviour: stop). A stopped EC2 machine still bills its disk ({disk} GB) until you terminate it.</source>
            <translation>花费达到 {budget} 时，机器上的代理会将其关机，EC2 随即停止它（关机行为：停止）。已停止的 EC2 机器在你销毁它之前仍会按其磁盘（{disk} GB）计费。</translation>
        </message>
        <message>
            <source>At {budget} gpudesk stops this machine with StopInstances in STOP_CHARGING mode when the app is running: the compute stops billing, but a stopped Tencent Cloud machine still bills its disk ({disk} GB) until you terminate it. A stop from inside a Tencent Cloud machine keeps charging, so with the laptop shut nothing stops the bill: choose terminate for a cap Tencent Cloud enforces itself.</source>
            <translation>花费达到 {budget} 时，只要 gpudesk 正在运行，它就会用 StopInstances 以停机不收费（STOP_CHARGING）方式停止这台机器：计算资源不再计费，但已停止的腾讯云机器在你销毁它之前仍会按其磁盘（{disk} GB）计费。在腾讯云机器内部关机会继续收费，所以合上笔记本后就没有什么能停止计费：如需由腾讯云自行执行的上限，请选择“销毁”。</translation>
        </message>
        <message>
            <source>At {budget} gpudesk stops this machine with StopInstances in StopCharging mode when the app is running: the compute stops billing, but a stopped Alibaba Cloud machine still bills its disk ({disk} GB) until you release it. Where the instance type does not allow StopCharging, a stopped machine keeps charging in full (KeepCharging). A stop from inside an Alibaba Cloud machine keeps charging, so with the laptop shut nothing stops the bill: only the cloud's release timer ends it on its own, and that comes with terminate only.</source>
            <translation>花费达到 {budget} 时，只要 gpudesk 正在运行，它就会用 StopInstances 以停机不收费（StopCharging）方式停止这台机器：计算资源不再计费，但已停止的阿里云机器在你释放它之前仍会按其磁盘（{disk} GB）计费。对于不支持停机不收费的实例规格，停止后的机器会继续全额计费（KeepCharging）。在阿里云机器内部关机会继续收费，所以合上笔记本后就没有什么能停止计费：只有云端的自动释放定时器能自行结束计费，而这只在选择“销毁”时才会设置。</translation>
        </message>
        <message>
            <source>A Tencent Cloud spot machine cannot be stopped without charging, so at {budget} it is terminated, not stopped.</source>
            <translation>腾讯云竞价实例无法停机不收费，因此花费达到 {budget} 时它会被销毁，而不是停止。</translation>
        </message>
        <message>
            <source>An Alibaba Cloud spot machine that is stopped may not start again (the cloud can give its capacity away) while its disk bills on, so at {budget} it is released, not stopped; keep the run's work in its bucket.</source>
            <translation>阿里云抢占式实例停机后可能无法再次启动（云平台可能把其资源分给别人），而其磁盘仍会继续计费，因此在 {budget} 时它会被释放而不是停机；请把运行的成果保存在其存储桶中。</translation>
        </message>
        <message>
            <source>This stop needs gpudesk running and online: while the desktop has no network, nothing stops the bill.</source>
            <translation>这次停止需要 gpudesk 正在运行并且联网：电脑断网期间，没有什么能停止计费。</translation>
        </message>
        <message>
            <source>At {budget} {cloud} itself terminates this machine, at a time set from the budget and the price it quotes just before the launch, even if gpudesk and the machine's agent are gone.</source>
            <translation>花费达到 {budget} 时，{cloud}会自行销毁这台机器，时间由预算和它在启动前的报价决定，即使 gpudesk 和机器上的代理都已不在。</translation>
        </message>
        <message>
            <source>At {budget} the group ends itself: its own scheduled action, set from the cloud's price before anything is made, takes it to 0 machines, even with gpudesk and every agent gone. Each machine's agent ends the group sooner when the run's spend over all its machines reaches the budget. Nothing is left billing: each machine's disk goes with it.</source>
            <translation>到 {budget} 时伸缩组会自行结束：它自己的定时任务（在创建任何东西之前按云的报价设定）会把它缩到 0 台机器，即使 gpudesk 和所有代理都不在了也一样。当这次运行在所有机器上的花费达到预算时，每台机器上的代理会更早结束伸缩组。不会留下任何计费的东西：每台机器的磁盘随机器一起释放。</translation>
        </message>
        <message>
            <source>At {budget} the machine's agent shuts it down ({action}).</source>
            <translation>花费达到 {budget} 时，机器上的代理会将其关机（{action}）。</translation>
        </message>
        <message>
            <source>stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>terminate</source>
            <translation>销毁</translation>
        </message>
        <message>
            <source>While gpudesk runs, it also {action}s the machine through the cloud's API at {budget}.</source>
            <translation>gpudesk 运行期间，还会在花费达到 {budget} 时通过云的 API {action}这台机器。</translation>
        </message>
        <message>
            <source>{cloud} then stops it in {mode} mode: the compute stops billing, but a stopped machine still bills its disk ({disk} GB) until you delete it.</source>
            <translation>随后 {cloud} 以 {mode} 模式关机：计算部分停止计费，但关机的机器在您删除之前仍按磁盘（{disk} GB）计费。</translation>
        </message>
        <message>
            <source>Stopped, that disk costs about {day} a day ({month} a month at list price); gpudesk counts it in the month's spend as it accrues.</source>
            <translation>停止后，这块磁盘按目录价每天约 {day}（每月 {month}）；gpudesk 会随产生把它计入当月花费。</translation>
        </message>
        <message>
            <source>The machine's agent has the new rules: {action} at {cap} USD ({spent} USD spent so far).</source>
            <translation>机器上的代理已获得新规则：花费达到 {cap} USD 时{action}（目前已花费 {spent} USD）。</translation>
        </message>
        <message>
            <source>The machine's agent could not be reached now ({why}): it gets the new rules at the next connect.</source>
            <translation>现在无法连接到机器上的代理（{why}）：它会在下次连接时获得新规则。</translation>
        </message>
        <message>
            <source>The machine is {state}: its agent gets the new rules at the next connect.</source>
            <translation>机器处于{state}状态：其代理会在下次连接时获得新规则。</translation>
        </message>
        <message>
            <source>gpudesk knows no address of the machine yet: its agent gets the new rules at the next connect.</source>
            <translation>gpudesk 还不知道这台机器的地址：其代理会在下次连接时获得新规则。</translation>
        </message>
        <message>
            <source>EC2 says: an OS shutdown {value}s the machine (shutdown behaviour).</source>
            <translation>EC2 表示：操作系统关机会{value}这台机器（关机行为）。</translation>
        </message>
        <message>
            <source>{cloud} says: it terminates the machine itself at {time} UTC.</source>
            <translation>{cloud}表示：它会在 UTC 时间 {time} 自行销毁这台机器。</translation>
        </message>
        <message>
            <source>{cloud} says: no time is set at which it ends the machine itself.</source>
            <translation>{cloud}表示：没有设置由它自行结束这台机器的时间。</translation>
        </message>
        <message>
            <source>The machine has no cloud machine yet ({state}): the cloud's cap comes with its launch.</source>
            <translation>这台机器在云端还没有对应的实例（{state}）：云端的上限会随其启动一并设置。</translation>
        </message>
        <message>
            <source>{cloud} could not be asked what it holds now: {why}</source>
            <translation>无法向{cloud}查询它当前保存的设置：{why}</translation>
        </message>
        <message>
            <source>The cloud's cap did not change and stays as it was: {why}</source>
            <translation>云端的上限没有改变，仍保持原样：{why}</translation>
        </message>
        <message>
            <source>{cloud} says: the group {group} goes to 0 machines at {time} UTC (its own scheduled action).</source>
            <translation>{cloud} 表示：伸缩组 {group} 将于 UTC {time} 缩减到 0 台机器（它自己的定时任务）。</translation>
        </message>
        <message>
            <source>{cloud} says: the group {group} holds no scheduled end.</source>
            <translation>{cloud} 表示：伸缩组 {group} 没有设定结束时间。</translation>
        </message>
        <message>
            <source>The new budget is already spent: the group {group} was ended, so it starts no machine and bills nothing more.</source>
            <translation>新预算已经花完：伸缩组 {group} 已被结束，它不会再启动机器，也不再产生费用。</translation>
        </message>
        <message>
            <source>no price: no budget can be counted</source>
            <translation>没有价格：无法计算任何预算</translation>
        </message>
        <message>
            <source>gpudesk found this machine in the cloud and has no price for it: the catalog has none and the cloud gave none when asked ({why}). Its spend counts as 0, so no budget of it can ever cross: terminate it, or watch its bill in the cloud's console.</source>
            <translation>gpudesk 在云端找到了这台机器，但没有它的价格：目录中没有，询问云端时云端也没有给出（{why}）。它的花费按 0 计算，因此它的任何预算都不会被触发：请终止它，或在云控制台中留意它的账单。</translation>
        </message>
        <message>
            <source>{first} {second}</source>
            <translation>{first}{second}</translation>
        </message>
    </context>
    <context>
        <name>HostKey</name>
        <message>
            <source>The host key of {host} has changed: it was pinned as {expected}, but the machine now offers {offered}. gpudesk refused to connect, because this is what an attacker in the middle would look like. If the machine was rebuilt, forget its pinned key and connect again.</source>
            <translation>{host} 的主机密钥已变更：之前固定的是 {expected}，但机器现在提供的是 {offered}。gpudesk 拒绝连接，因为这正是中间人攻击的样子。如果机器是重建的，请忘记它已固定的密钥后再连接。</translation>
        </message>
        <message>
            <source>{host} offered a host key that is not pinned ({offered}), and gpudesk was told not to trust new keys. Give its fingerprint, or allow pinning on first use.</source>
            <translation>{host} 提供了一个未固定的主机密钥（{offered}），而 gpudesk 被设置为不信任新密钥。请提供它的指纹，或允许首次使用时固定。</translation>
        </message>
        <message>
            <source>The host key of {host} ({offered}) was not accepted; nothing was sent.</source>
            <translation>{host} 的主机密钥（{offered}）未被接受；没有发送任何内容。</translation>
        </message>
        <message>
            <source>{host} offered the host key {offered}, which is not the expected {expected}. gpudesk refused to connect.</source>
            <translation>{host} 提供的主机密钥是 {offered}，不是预期的 {expected}。gpudesk 拒绝连接。</translation>
        </message>
        <message>
            <source>'{text}' is not a host key fingerprint; expected SHA256: followed by 43 characters, as ssh-keygen -l prints it.</source>
            <translation>'{text}' 不是主机密钥指纹；应为 SHA256: 后跟 43 个字符，与 ssh-keygen -l 的输出一致。</translation>
        </message>
        <message>
            <source>The host key of {host} was not replaced: the connection was not verified against its pinned key ({offered}).</source>
            <translation>{host} 的主机密钥没有被替换：这次连接没有用其固定密钥（{offered}）验证。</translation>
        </message>
        <message>
            <source>The host key of {host} could not be replaced ({step}): {detail}. The machine keeps the key from its launch, which anyone who can read its user data also holds.</source>
            <translation>无法替换 {host} 的主机密钥（{step}）：{detail}。这台机器继续使用启动时的密钥，任何能读取其用户数据的人也持有该密钥。</translation>
        </message>
        <message>
            <source>{host} was given a new host key ({expected}), but after sshd reloaded it offered {offered}.</source>
            <translation>已为 {host} 设置新的主机密钥（{expected}），但 sshd 重新加载后它提供的是 {offered}。</translation>
        </message>
    </context>
    <context>
        <name>HostKeyQuestion</name>
        <message>
            <source>Forget the pinned host key?</source>
            <translation>忘记已固定的主机密钥？</translation>
        </message>
        <message>
            <source>Forget the host key pinned for {name}?

Do this only if you know the machine was rebuilt or reinstalled: a changed key is also what an attacker in the middle looks like. The next connection shows the key the machine offers now, for you to compare with its console before it is pinned.</source>
            <translation>忘记为 {name} 固定的主机密钥？

只有在你确知这台机器已重建或重装系统时才这样做：密钥改变也正是中间人攻击的样子。下次连接时会显示机器当前提供的密钥，请先与其控制台核对，再固定它。</translation>
        </message>
        <message>
            <source>Forget the key</source>
            <translation>忘记密钥</translation>
        </message>
        <message>
            <source>New machine</source>
            <translation>新机器</translation>
        </message>
        <message>
            <source>The machine {name} offers a {type} host key that is not pinned yet:

{fp}

Compare it with the fingerprint your cloud console or the machine's owner shows. Pin it and connect?</source>
            <translation>机器 {name} 提供了一个尚未固定的 {type} 主机密钥：

{fp}

请与云控制台或机器管理员给出的指纹核对。固定该密钥并连接吗？</translation>
        </message>
    </context>
    <context>
        <name>InstancesModel</name>
        <message>
            <source>Machine</source>
            <translation>机器</translation>
        </message>
        <message>
            <source>Provider</source>
            <translation>云厂商</translation>
        </message>
        <message>
            <source>Type</source>
            <translation>机型</translation>
        </message>
        <message>
            <source>GPUs</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Market</source>
            <translation>计费方式</translation>
        </message>
        <message>
            <source>State</source>
            <translation>状态</translation>
        </message>
        <message>
            <source>Uptime</source>
            <translation>运行时长</translation>
        </message>
        <message>
            <source>Price/h</source>
            <translation>单价/时</translation>
        </message>
        <message>
            <source>Spent</source>
            <translation>已花费</translation>
        </message>
        <message>
            <source>Budget</source>
            <translation>预算</translation>
        </message>
        <message>
            <source>Address</source>
            <translation>地址</translation>
        </message>
        <message>
            <source>requesting</source>
            <translation>请求中</translation>
        </message>
        <message>
            <source>starting</source>
            <translation>启动中</translation>
        </message>
        <message>
            <source>running</source>
            <translation>运行中</translation>
        </message>
        <message>
            <source>stopping</source>
            <translation>停止中</translation>
        </message>
        <message>
            <source>stopped</source>
            <translation>已停止</translation>
        </message>
        <message>
            <source>stopped (still billing)</source>
            <translation>已停止（仍在计费）</translation>
        </message>
        <message>
            <source>terminated</source>
            <translation>已销毁</translation>
        </message>
        <message>
            <source>not created</source>
            <translation>未创建</translation>
        </message>
        <message>
            <source>gone</source>
            <translation>已消失</translation>
        </message>
        <message>
            <source>ready</source>
            <translation>就绪</translation>
        </message>
        <message>
            <source>{h} h {m:02d} min</source>
            <translation>{h} 小时 {m:02d} 分</translation>
        </message>
        <message>
            <source>not asked</source>
            <translation>未询问</translation>
        </message>
        <message>
            <source>What the cloud last said of it: {error}</source>
            <translation>云最后一次对它的说明：{error}</translation>
        </message>
        <message>
            <source>spot</source>
            <translation>竞价</translation>
        </message>
        <message>
            <source>on-demand</source>
            <translation>按量</translation>
        </message>
        <message>
            <source>reclaimed; its group starts another</source>
            <translation>已被回收；伸缩组正在启动另一台</translation>
        </message>
        <message>
            <source>{state} (kept alive)</source>
            <translation>{state}（自动恢复）</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>{amount}, then the group ends</source>
            <translation>{amount}，然后伸缩组结束</translation>
        </message>
        <message>
            <source>stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>terminate</source>
            <translation>销毁</translation>
        </message>
        <message>
            <source>warn</source>
            <translation>提醒</translation>
        </message>
        <message>
            <source>{amount}, then {action}</source>
            <translation>{amount}，然后{action}</translation>
        </message>
    </context>
    <context>
        <name>InstancesPage</name>
        <message>
            <source>Show ended</source>
            <translation>显示已结束的</translation>
        </message>
        <message>
            <source>Check clouds</source>
            <translation>检查云端</translation>
        </message>
        <message>
            <source>Stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>Start</source>
            <translation>启动</translation>
        </message>
        <message>
            <source>Terminate…</source>
            <translation>销毁…</translation>
        </message>
        <message>
            <source>Copy SSH command</source>
            <translation>复制 SSH 命令</translation>
        </message>
        <message>
            <source>Allow my new address</source>
            <translation>允许我的新地址</translation>
        </message>
        <message>
            <source>SSH does not answer? If this computer's public address changed, open SSH to the new one (and close it to the old); rules you added yourself are kept.</source>
            <translation>SSH 无响应？如果本机的公网地址变了，就向新地址开放 SSH（并关闭旧地址）；你自己添加的规则会保留。</translation>
        </message>
        <message>
            <source>Remove from list</source>
            <translation>从列表中移除</translation>
        </message>
        <message>
            <source>Change budget…</source>
            <translation>修改预算…</translation>
        </message>
        <message>
            <source>The selected machine's own budget and what happens at it: the ledger, the cloud's own cap and the machine's agent all move to it.</source>
            <translation>所选机器自己的预算以及达到预算时的操作：账本、云端自身的上限和机器上的代理都会随之更新。</translation>
        </message>
        <message>
            <source>{n} running ({rate} per hour)</source>
            <translation>{n} 台运行中（每小时 {rate}）</translation>
        </message>
        <message>
            <source>{n} stopping (billed until the cloud says stopped)</source>
            <translation>{n} 台停止中（在云端确认已停止前持续计费）</translation>
        </message>
        <message>
            <source>{n} starting</source>
            <translation>{n} 台启动中</translation>
        </message>
        <message>
            <source>{n} machine(s) may be billing now: {parts}.</source>
            <translation>{n} 台机器可能正在计费：{parts}。</translation>
        </message>
        <message>
            <source>Terminate what you no longer need.</source>
            <translation>请销毁不再需要的机器。</translation>
        </message>
        <message>
            <source>No machine is running; {disks}.</source>
            <translation>没有正在运行的机器；{disks}。</translation>
        </message>
        <message>
            <source>Nothing is billing.</source>
            <translation>没有正在计费的机器。</translation>
        </message>
        <message>
            <source>{n} stopped machine(s) still bill their disks until terminated</source>
            <translation>{n} 台已停止的机器的磁盘在销毁前仍在计费</translation>
        </message>
        <message>
            <source>Datasets moved this month:</source>
            <translation>本月移动的数据集：</translation>
        </message>
        <message>
            <source>Storage this month: no bucket held a run's data.</source>
            <translation>本月存储:没有存储桶保存运行的数据。</translation>
        </message>
        <message>
            <source>Storage this month: {gbm} GB-month in your buckets; its cost is unknown.</source>
            <translation>本月存储:您的存储桶共 {gbm} GB-月;费用未知。</translation>
        </message>
        <message>
            <source>Storage this month: {gbm} GB-month in your buckets, {cost} known; the rest has no price.</source>
            <translation>本月存储:您的存储桶共 {gbm} GB-月,已知费用 {cost};其余部分没有价格。</translation>
        </message>
        <message>
            <source>Storage this month: {gbm} GB-month in your buckets, {cost}.</source>
            <translation>本月存储:您的存储桶共 {gbm} GB-月,{cost}。</translation>
        </message>
        <message>
            <source>Run {run} ({region}): {gbm} GB-month, cost unknown: {why}</source>
            <translation>运行 {run}({region}):{gbm} GB-月,费用未知:{why}</translation>
        </message>
        <message>
            <source>Run {run} ({region}): {gbm} GB-month × {price} {currency} = {cost} {currency} ({source}, {date}).</source>
            <translation>运行 {run}({region}):{gbm} GB-月 × {price} {currency} = {cost} {currency}({source},{date})。</translation>
        </message>
        <message>
            <source>Data out to this computer: {size}, cost unknown: {why}</source>
            <translation>下载到本机的流量:{size},费用未知:{why}</translation>
        </message>
        <message>
            <source>Data out to this computer: {size}, {cost} {currency} ({source}, {date}).</source>
            <translation>下载到本机的流量:{size},{cost} {currency}({source},{date})。</translation>
        </message>
        <message>
            <source>Datasets in {uri} ({region}): {gbm} GB-month, cost unknown: {why}</source>
            <translation>{uri}（{region}）中的数据集：{gbm} GB·月，费用未知：{why}</translation>
        </message>
        <message>
            <source>Datasets in {uri} ({region}): {gbm} GB-month × {price} {currency} = {cost} {currency} ({source}, {date}).</source>
            <translation>{uri}（{region}）中的数据集：{gbm} GB·月 × {price} {currency} = {cost} {currency}（{source}，{date}）。</translation>
        </message>
        <message>
            <source>Requests: {n} ({tier1} PUT/COPY/POST/LIST, {tier2} GET and other), cost unknown: {why}</source>
            <translation>请求：{n} 次（PUT/COPY/POST/LIST {tier1} 次，GET 及其他 {tier2} 次），费用未知：{why}</translation>
        </message>
        <message>
            <source>Requests: {n} ({tier1} PUT/COPY/POST/LIST, {tier2} GET and other) ≈ {cost} {currency} ({source}, {date}).</source>
            <translation>请求：{n} 次（PUT/COPY/POST/LIST {tier1} 次，GET 及其他 {tier2} 次）≈ {cost} {currency}（{source}，{date}）。</translation>
        </message>
        <message>
            <source>No monthly budget (Preferences sets one).</source>
            <translation>没有月度预算（可在偏好设置中设置）。</translation>
        </message>
        <message>
            <source>This month: {spent} of the {cap} budget ({percent:.0f}%).</source>
            <translation>本月：已用 {spent}，预算 {cap}（{percent:.0f}%）。</translation>
        </message>
        <message>
            <source>Checking the clouds…</source>
            <translation>正在检查云端…</translation>
        </message>
        <message>
            <source>Found {n} machine(s) the ledger did not know.</source>
            <translation>发现 {n} 台账本中没有记录的机器。</translation>
        </message>
        <message>
            <source>{n} machine(s) removed from the list still exist in their cloud: they are back, with the budget they had.</source>
            <translation>{n} 台从列表中移除的机器仍存在于其云端：它们已回到列表，预算保持原样。</translation>
        </message>
        <message>
            <source>{n} machine(s) no longer exist.</source>
            <translation>{n} 台机器已不存在。</translation>
        </message>
        <message>
            <source>{n} machine(s) found have no price: no budget can be counted for them (see Price/h).</source>
            <translation>找到的 {n} 台机器没有价格：无法为它们计算任何预算（见“每小时价格”）。</translation>
        </message>
        <message>
            <source>{n} machine(s) were stopped or started outside gpudesk: their cloud timer followed.</source>
            <translation>{n} 台机器在 gpudesk 之外被停止或启动：它们的云端定时器已随之调整。</translation>
        </message>
        <message>
            <source>{provider} not checked: {why}</source>
            <translation>未检查 {provider}：{why}</translation>
        </message>
        <message>
            <source>No cloud account to check: add your keys on the Accounts page.</source>
            <translation>没有可检查的云账号：请在“账号”页添加密钥。</translation>
        </message>
        <message>
            <source>Up to date.</source>
            <translation>已是最新。</translation>
        </message>
        <message>
            <source>The spot machine of {machine} was reclaimed; its group is starting another, which resumes the run from the bucket.</source>
            <translation>{machine} 的竞价实例已被回收；它的伸缩组正在启动另一台，新机器会从存储桶恢复运行。</translation>
        </message>
        <message>
            <source>Reclaimed</source>
            <translation>已被回收</translation>
        </message>
        <message>
            <source>{machine} was reclaimed and replaced: the new machine resumes the run from the bucket's latest checkpoint.</source>
            <translation>{machine} 被回收后已替换：新机器从存储桶里最新的检查点恢复运行。</translation>
        </message>
        <message>
            <source>Resumed on a new machine</source>
            <translation>已在新机器上恢复</translation>
        </message>
        <message>
            <source>No spot capacity came back for {machine} within the wait set in Preferences, so its group was ended and bills nothing. The run's checkpoints stay in its bucket: Resume on the Run page starts it on another machine.</source>
            <translation>在偏好设置的等待时间内，{machine} 没有等回竞价容量，所以它的伸缩组已结束，不再计费。运行的检查点保留在存储桶中：在“运行”页点“恢复”可在另一台机器上继续。</translation>
        </message>
        <message>
            <source>Run paused: no spot capacity</source>
            <translation>运行已暂停：没有竞价容量</translation>
        </message>
        <message>
            <source>Stopping {name}…</source>
            <translation>正在停止 {name}…</translation>
        </message>
        <message>
            <source>Starting {name}…</source>
            <translation>正在启动 {name}…</translation>
        </message>
        <message>
            <source>Terminating {name}…</source>
            <translation>正在销毁 {name}…</translation>
        </message>
        <message>
            <source>The machine was not changed</source>
            <translation>机器未被更改</translation>
        </message>
        <message>
            <source>{name} is terminated: it no longer bills.</source>
            <translation>{name} 已销毁：不再计费。</translation>
        </message>
        <message>
            <source>{name}: the cloud says {state}; Check clouds asks again.</source>
            <translation>{name}：云端显示为{state}；“检查云端”会再次询问。</translation>
        </message>
        <message>
            <source>{name}: the cloud says {state} ({s} s)…</source>
            <translation>{name}：云端状态为{state}（{s} 秒）…</translation>
        </message>
        <message>
            <source>{name} is running.</source>
            <translation>{name} 正在运行。</translation>
        </message>
        <message>
            <source>{name} is still {state}; Check clouds asks again.</source>
            <translation>{name} 仍处于{state}状态；“检查云端”会再次查询。</translation>
        </message>
        <message>
            <source>Asking {cloud} what a stop of {name} bills…</source>
            <translation>正在向{cloud}查询停止 {name} 后如何计费…</translation>
        </message>
        <message>
            <source>Stop machine</source>
            <translation>停止机器</translation>
        </message>
        <message>
            <source>{words}

Stop {name} anyway?</source>
            <translation>{words}

仍要停止 {name} 吗？</translation>
        </message>
        <message>
            <source>End {name}'s group {group}? Its machine and disk are deleted and the cloud starts no other; anything not in the run's bucket is lost. Billing stops.</source>
            <translation>结束 {name} 的伸缩组 {group}？它的机器和磁盘会被删除，云不会再启动其他机器；不在运行存储桶中的内容都会丢失。计费停止。</translation>
        </message>
        <message>
            <source>Terminate machine</source>
            <translation>销毁机器</translation>
        </message>
        <message>
            <source>Remove {name} from the list? gpudesk forgets how to reach it; the machine itself is not touched.</source>
            <translation>从列表中移除 {name}？gpudesk 将不再记得如何连接它；机器本身不受影响。</translation>
        </message>
        <message>
            <source>Remove {name} from the list? It has ended ({state}); its row and its spend leave this list.</source>
            <translation>从列表中移除 {name}？它已结束（{state}）；它的这一行及其花费将从此列表中移除。</translation>
        </message>
        <message>
            <source>Remove {name} from the list? This does not delete it: {cloud_id} still exists in {cloud} ({state}) and its disk bills until you terminate it. The next Check clouds finds it again, with its budget ({budget}). To end its bill, use Terminate instead.</source>
            <translation>从列表中移除 {name}？这不会删除它：{cloud_id} 仍存在于{cloud}（{state}），其磁盘会一直计费，直到您将它终止。下次“检查云端”会再次找到它，并带回它的预算（{budget}）。要结束它的账单，请改用“终止”。</translation>
        </message>
        <message>
            <source>{name} was removed from the list.</source>
            <translation>{name} 已从列表中移除。</translation>
        </message>
        <message>
            <source>Remove</source>
            <translation>移除</translation>
        </message>
        <message>
            <source>Terminate {name} ({type}, {cloud_id})? The machine and its disk are deleted; anything not copied off it is lost. Billing stops.</source>
            <translation>销毁 {name}（{type}，{cloud_id}）？机器及其磁盘将被删除；没有复制出来的内容都会丢失。计费随即停止。</translation>
        </message>
        <message>
            <source>{n} stopped (still billing: {rate} per hour, as its cloud charges a machine stopped from inside in full)</source>
            <translation>{n} 台已停止但仍在计费（每小时 {rate}：从机器内部停止的机器，云会按运行时全额收费）</translation>
        </message>
        <message>
            <source>Terminate</source>
            <translation>销毁</translation>
        </message>
        <message>
            <source>Copied: {command}</source>
            <translation>已复制：{command}</translation>
        </message>
        <message>
            <source>Checking this computer's address for {name}…</source>
            <translation>正在为 {name} 检查本机地址…</translation>
        </message>
        <message>
            <source>SSH to {name} is already open to this computer ({address}); the address is not why SSH fails.</source>
            <translation>{name} 的 SSH 已向本机（{address}）开放；SSH 失败并非地址原因。</translation>
        </message>
        <message>
            <source>SSH to {name} is now open to {address} only (was {old}).</source>
            <translation>{name} 的 SSH 现在只向 {address} 开放（之前是 {old}）。</translation>
        </message>
        <message>
            <source>The SSH rule was not changed</source>
            <translation>SSH 规则未更改</translation>
        </message>
        <message>
            <source>{name}: budget now {budget}.</source>
            <translation>{name}：当前预算 {budget}。</translation>
        </message>
        <message>
            <source>{name} is stopped, but {cloud} keeps billing it in full ({word}: {why}) until it is terminated.</source>
            <translation>{name} 已停止，但{cloud}仍按全价对它计费（{word}：{why}），直到它被销毁。</translation>
        </message>
        <message>
            <source>{name} is stopped, but {cloud} keeps billing it in full ({word}) until it is terminated.</source>
            <translation>{name} 已停止，但{cloud}仍按全价对它计费（{word}），直到它被销毁。</translation>
        </message>
        <message>
            <source>{name} is stopped without charge ({word}): CPU, GPU and memory no longer bill; its cloud disks, bandwidth and image do until it is terminated.</source>
            <translation>{name} 已停止且停止计费（{word}）：CPU、GPU 和内存不再计费；它的云硬盘、带宽和镜像在销毁前仍计费。</translation>
        </message>
        <message>
            <source>{name} is stopped without charge ({word}): CPU, GPU and memory no longer bill; its system disk does until it is terminated, and its public address may change when it starts again.</source>
            <translation>{name} 已停止且停止计费（{word}）：CPU、GPU 和内存不再计费；它的系统盘在销毁前仍计费，再次启动时公网地址可能会变。</translation>
        </message>
        <message>
            <source>{name} is stopped: the machine no longer bills; its disk does until it is terminated.</source>
            <translation>{name} 已停止：机器不再计费；它的磁盘在销毁前仍计费。</translation>
        </message>
        <message>
            <source>{cloud} did not say what still bills: {answer}</source>
            <translation>{cloud}没有说明还有什么在计费：{answer}</translation>
        </message>
    </context>
    <context>
        <name>KeepAlive</name>
        <message>
            <source>Recover by itself is for spot machines: an on-demand machine is not reclaimed.</source>
            <translation>“自动恢复”只用于竞价实例：按量实例不会被回收。</translation>
        </message>
        <message>
            <source>Recover by itself needs a budget: the group's own end (size 0 when the budget runs out) is what stops a group that replaces its machines from billing forever.</source>
            <translation>“自动恢复”需要预算：伸缩组自己的结束动作（预算用完时缩到 0 台）是唯一能阻止会不断补机器的伸缩组一直计费的东西。</translation>
        </message>
        <message>
            <source>{cloud} machines cannot recover by themselves in gpudesk yet.</source>
            <translation>gpudesk 还不能让 {cloud} 的机器自动恢复。</translation>
        </message>
        <message>
            <source>The budget of {budget} lasts less than a minute at {price}/h: nothing was launched.</source>
            <translation>{budget} 的预算按 {price}/小时 用不到一分钟：没有启动任何机器。</translation>
        </message>
        <message>
            <source>{cloud} did not keep the group's end time, so the group {group} was deleted again before it could bill without a cap.</source>
            <translation>{cloud} 没有保存伸缩组的结束时间，所以伸缩组 {group} 在能不设上限地计费之前已被删除。</translation>
        </message>
        <message>
            <source>The group {group} started no machine within {minutes} minutes (the cloud's last word: {reason}); it was deleted, so it bills nothing.</source>
            <translation>伸缩组 {group} 在 {minutes} 分钟内没有启动任何机器（云的最后说法：{reason}）；它已被删除，不再计费。</translation>
        </message>
        <message>
            <source>{name} is kept alive by its group {group}: stopping it would only make the cloud start another. Terminate it to end the group.</source>
            <translation>{name} 由伸缩组 {group} 保持运行：停止它只会让云再启动一台。要结束伸缩组，请销毁它。</translation>
        </message>
        <message>
            <source>The group's next machine resumes run {run} from the bucket.</source>
            <translation>伸缩组的下一台机器将从存储桶恢复运行 {run}。</translation>
        </message>
        <message>
            <source>Run {run} has no bucket, so the group's next machine cannot resume it: after a reclaim the run waits for you. It goes on here.</source>
            <translation>运行 {run} 没有存储桶，伸缩组的下一台机器无法恢复它：实例被回收后，该运行将等你处理。它会继续在这台机器上运行。</translation>
        </message>
        <message>
            <source>The group's machines have no role, so the group's next machine cannot fetch run {run} from the bucket. It goes on here, with its copies in the bucket.</source>
            <translation>伸缩组的机器没有角色，下一台机器无法从存储桶取得运行 {run}。它会继续在这台机器上运行，副本保存在存储桶中。</translation>
        </message>
        <message>
            <source>The group's cloud could not be asked ({why}): its next machine will not resume run {run}. The run goes on here.</source>
            <translation>无法访问伸缩组所在的云（{why}）：它的下一台机器不会恢复运行 {run}。该运行会继续在这台机器上进行。</translation>
        </message>
        <message>
            <source>The role of the group's machines was not given run {run}'s folder ({why}): the group's next machine will not resume it. The run goes on here.</source>
            <translation>未能让伸缩组机器的角色访问运行 {run} 的文件夹（{why}）：伸缩组的下一台机器不会恢复它。该运行会继续在这台机器上进行。</translation>
        </message>
        <message>
            <source>What a new machine needs to resume run {run} was not written to the bucket ({why}): the group's next machine will not resume it. The run goes on here.</source>
            <translation>新机器恢复运行 {run} 所需的内容未能写入存储桶（{why}）：伸缩组的下一台机器不会恢复它。该运行会继续在这台机器上进行。</translation>
        </message>
        <message>
            <source>The group's launch template was not given run {run} ({why}): its next machine will start without resuming it. The run goes on here.</source>
            <translation>未能把运行 {run} 写入伸缩组的启动模板（{why}）：它的下一台机器启动后不会恢复该运行。该运行会继续在这台机器上进行。</translation>
        </message>
        <message>
            <source>run {run} ended, so its group {group} was ended too: nothing of it bills now</source>
            <translation>运行 {run} 已结束，所以它的伸缩组 {group} 也已结束：现在不再计费</translation>
        </message>
        <message>
            <source>run {run} ended, but its group {group} could not be ended ({why}): it keeps a machine until its own end at {end}; end it on the Instances page (Terminate)</source>
            <translation>运行 {run} 已结束，但无法结束它的伸缩组 {group}（{why}）：它会保留一台机器，直到 {end} 自行结束；请在“实例”页用“销毁”结束它</translation>
        </message>
        <message>
            <source>The group's machines have no role ({why}): with gpudesk closed, a replacement can neither fetch the run from the bucket nor end its group; the group's own end at the budget still stops the bill.</source>
            <translation>伸缩组的机器没有角色（{why}）：gpudesk 关闭时，替换机器既不能从存储桶取回运行，也不能结束伸缩组；伸缩组在预算处的结束动作仍会停止计费。</translation>
        </message>
    </context>
    <context>
        <name>LaunchDialog</name>
        <message>
            <source>Launch {type}</source>
            <translation>启动 {type}</translation>
        </message>
        <message>
            <source>{type}: {count} × {gpu}, {provider} {region}</source>
            <translation>{type}：{count} × {gpu}，{provider} {region}</translation>
        </message>
        <message>
            <source>Spot (cheaper, can be reclaimed)</source>
            <translation>竞价（更便宜，可能被回收）</translation>
        </message>
        <message>
            <source>Maximum spot price per hour</source>
            <translation>每小时最高竞价</translation>
        </message>
        <message>
            <source>Recover by itself</source>
            <translation>自动恢复</translation>
        </message>
        <message>
            <source>The cloud's own group of one machine starts another when this one is reclaimed; it resumes the run from the bucket even with gpudesk closed, and the group ends itself when the budget runs out. Needs spot and a budget.</source>
            <translation>由云自己的单机伸缩组在这台被回收时再启动一台；即使 gpudesk 关着，也会从存储桶恢复运行；预算用完时伸缩组自行结束。需要竞价实例和预算。</translation>
        </message>
        <message>
            <source>Disk</source>
            <translation>磁盘</translation>
        </message>
        <message>
            <source>SSH allowed only from</source>
            <translation>仅允许以下地址 SSH</translation>
        </message>
        <message>
            <source>If refused, also try</source>
            <translation>如被拒绝，也尝试</translation>
        </message>
        <message>
            <source>Image</source>
            <translation>镜像</translation>
        </message>
        <message>
            <source>At the budget</source>
            <translation>达到预算时</translation>
        </message>
        <message>
            <source>If {cloud} refuses gpudesk a role, launch anyway: only the open app stops it</source>
            <translation>如果{cloud}拒绝给 gpudesk 角色，仍然启动：只有打开的应用能停止它</translation>
        </message>
        <message>
            <source>Without its role, a stop from inside the machine keeps charging: with gpudesk closed nothing stops the bill. Unticked, such a launch is refused before anything bills.</source>
            <translation>没有角色时，从机器内部关机仍会继续计费：关闭 gpudesk 后没有任何东西能停止计费。不勾选时，这样的启动会在产生任何费用之前被拒绝。</translation>
        </message>
        <message>
            <source>stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>terminate</source>
            <translation>销毁</translation>
        </message>
        <message>
            <source>Run data (checkpoints, logs, outputs)</source>
            <translation>运行数据（检查点、日志、输出）</translation>
        </message>
        <message>
            <source>The account's gpudesk bucket (auto)</source>
            <translation>该账号的 gpudesk 存储桶（自动）</translation>
        </message>
        <message>
            <source>No bucket (copies on this computer only)</source>
            <translation>不用存储桶（只在本机保存副本）</translation>
        </message>
        <message>
            <source>Another bucket…</source>
            <translation>其他存储桶…</translation>
        </message>
        <message>
            <source>Where the machine's agent uploads each finished checkpoint, the log and the outputs, so they outlive the machine. auto: a bucket of this account in the machine's region, made on first use.</source>
            <translation>机器上的代理把每个完成的检查点、日志和输出上传到这里，机器没了它们也还在。自动：该账号在机器所在地域的存储桶，首次使用时创建。</translation>
        </message>
        <message>
            <source>{scheme}://{bucket}/prefix</source>
            <translation>{scheme}://{bucket}/前缀</translation>
        </message>
        <message>
            <source>Detect</source>
            <translation>检测</translation>
        </message>
        <message>
            <source>your public address, e.g. 203.0.113.7/32</source>
            <translation>你的公网地址，例如 203.0.113.7/32</translation>
        </message>
        <message>
            <source>Progress</source>
            <translation>进度</translation>
        </message>
        <message>
            <source>Cancel launch</source>
            <translation>取消启动</translation>
        </message>
        <message>
            <source>Close</source>
            <translation>关闭</translation>
        </message>
        <message>
            <source>Launch ({rate}/h, the cloud's quote)</source>
            <translation>启动（{rate}/小时，云的报价）</translation>
        </message>
        <message>
            <source>Billing starts when the machine runs: {rate} per hour, as {cloud} quoted, until you stop or terminate it.</source>
            <translation>机器运行后开始计费：按{cloud}的报价每小时 {rate}，直到你停止或销毁它。</translation>
        </message>
        <message>
            <source>Launch (about {rate}/h)</source>
            <translation>启动（约 {rate}/小时）</translation>
        </message>
        <message>
            <source>Billing starts when the machine runs: about {rate} per hour until you stop or terminate it.</source>
            <translation>机器运行后开始计费：每小时约 {rate}，直到你停止或销毁它。</translation>
        </message>
        <message>
            <source>Launch (price not known yet)</source>
            <translation>启动（价格暂未知）</translation>
        </message>
        <message>
            <source>gpudesk has no price for this machine: the cloud publishes none to bundle. Before launching it asks the cloud for the pay-as-you-go price and counts the spend and the budget from that answer (no answer, no machine); Tools → Refresh prices from my clouds shows it here first.</source>
            <translation>gpudesk 没有这台机器的价格：该云没有可内置的公开价格。启动前 gpudesk 会向云查询按量付费价格，并据此计算花费和预算（查不到价格就不启动）；“工具 → 从我的云账号刷新价格”可先在此处显示价格。</translation>
        </message>
        <message>
            <source>Spot prices change and the cloud may reclaim the machine with two minutes' notice.</source>
            <translation>竞价价格会变动，云厂商可能提前两分钟通知后回收机器。</translation>
        </message>
        <message>
            <source>No spot price is known yet: the estimate is the on-demand price, the most it bills without a maximum.</source>
            <translation>尚无竞价报价：此估算采用按量计费价格，即不设上限时的最高费用。</translation>
        </message>
        <message>
            <source>Tencent's maximum price is in CNY per hour.</source>
            <translation>腾讯云的最高价格以人民币/小时计。</translation>
        </message>
        <message>
            <source>Alibaba Cloud's maximum price is in CNY per hour; without one the machine pays the market price (SpotAsPriceGo), never more than pay-as-you-go.</source>
            <translation>阿里云的最高价以人民币/小时计；不设最高价时按市场价付费（SpotAsPriceGo），不会超过按量付费价格。</translation>
        </message>
        <message>
            <source>The budget is {hours} hours of the price the cloud quotes before the launch; the Instances page says who enforces it once the machine runs.</source>
            <translation>预算是云在启动前报价的 {hours} 小时费用；机器运行后，“实例”页会说明由谁执行它。</translation>
        </message>
        <message>
            <source>Budget {high}: enough for the job in at least 9 cases out of 10</source>
            <translation>预算 {high}：至少十次中有九次足以完成此作业</translation>
        </message>
        <message>
            <source>Could not find this computer's public address, so SSH cannot be limited to it: type your public address in "SSH allowed only from" (for example 203.0.113.7).</source>
            <translation>找不到这台电脑的公网地址，因此无法把 SSH 限制为只对它开放：请在“仅允许以下地址 SSH”中输入你的公网地址（例如 203.0.113.7）。</translation>
        </message>
        <message>
            <source>Going on where the cloud accepted it ({n} place(s) refused first).</source>
            <translation>已在云端接受的位置继续（此前有 {n} 个位置拒绝）。</translation>
        </message>
        <message>
            <source>{n} place(s) refused before it (hover for why).</source>
            <translation>在此之前有 {n} 个位置拒绝（悬停查看原因）。</translation>
        </message>
        <message>
            <source>The machine was not launched</source>
            <translation>机器未启动</translation>
        </message>
        <message>
            <source>Stopped waiting. The machine still runs and bills; it is on the Instances page.</source>
            <translation>已停止等待。机器仍在运行并计费；它在“实例”页上。</translation>
        </message>
        <message>
            <source>The machine already runs and bills; it is on the Instances page. Keep launching in the background (the rest of its set-up goes on), or stop the launch: the machine is terminated.</source>
            <translation>机器已经在运行并计费，它在“实例”页面上。可以在后台继续启动（其余设置继续进行），或停止启动：机器会被销毁。</translation>
        </message>
        <message>
            <source>Keep launching in the background? The machine appears on the Instances page when it is made, and bills from then on. Or stop the launch: anything already requested is terminated.</source>
            <translation>在后台继续启动？机器创建后会出现在“实例”页面上，并从那时起计费。或者停止启动：已请求的一切都会被销毁。</translation>
        </message>
        <message>
            <source>The launch is not finished</source>
            <translation>启动尚未完成</translation>
        </message>
        <message>
            <source>Back to the launch</source>
            <translation>返回启动</translation>
        </message>
        <message>
            <source>Stop the launch and terminate</source>
            <translation>停止启动并销毁</translation>
        </message>
        <message>
            <source>Keep launching in the background</source>
            <translation>在后台继续启动</translation>
        </message>
        <message>
            <source>Cancelling: terminating anything already requested…</source>
            <translation>正在取消：销毁已请求的资源…</translation>
        </message>
        <message>
            <source>Refused, trying the next place: {why}</source>
            <translation>被拒绝，正在尝试下一个地点：{why}</translation>
        </message>
        <message>
            <source>Budget for this machine</source>
            <translation>这台机器的预算</translation>
        </message>
        <message>
            <source>{hours} h × its price</source>
            <translation>{hours} 小时 × 其价格</translation>
        </message>
        <message>
            <source>No budget (nothing stops the bill but you)</source>
            <translation>不设预算（除了你自己，没有什么会停止计费）</translation>
        </message>
        <message>
            <source>Launch without a budget: no agent, cloud timer or gpudesk stops this machine for its spend. Only for a machine you watch yourself.</source>
            <translation>不设预算启动：代理、云定时器和 gpudesk 都不会因花费而停止这台机器。仅适用于你自己看管的机器。</translation>
        </message>
        <message>
            <source>{cloud_id} is running at {address}. It is on the Instances page; connect with ssh {user}@{address}.</source>
            <translation>{cloud_id} 正在 {address} 运行。它在“实例”页上；用 ssh {user}@{address} 连接。</translation>
        </message>
        <message>
            <source>The machine is still not ready</source>
            <translation>机器仍未就绪</translation>
        </message>
        <message>
            <source>The machine was not terminated</source>
            <translation>机器未被销毁</translation>
        </message>
        <message>
            <source>its hourly price</source>
            <translation>其每小时价格</translation>
        </message>
        <message>
            <source>The machine runs, but SSH does not answer yet</source>
            <translation>机器已运行，但 SSH 尚无响应</translation>
        </message>
        <message>
            <source>The machine was made, but does not run yet</source>
            <translation>机器已创建，但尚未运行</translation>
        </message>
        <message>
            <source>It bills about {rate} per hour until you terminate it. Wait longer, see it on the Instances page, or terminate it.</source>
            <translation>在你销毁它之前，它每小时计费约 {rate}。你可以继续等待、到“实例”页查看，或者销毁它。</translation>
        </message>
        <message>
            <source>Wait longer</source>
            <translation>继续等待</translation>
        </message>
        <message>
            <source>Open Instances</source>
            <translation>打开“实例”页</translation>
        </message>
        <message>
            <source>Terminate</source>
            <translation>销毁</translation>
        </message>
        <message>
            <source>Waiting longer for the machine…</source>
            <translation>正在继续等待机器…</translation>
        </message>
        <message>
            <source>Terminating the machine…</source>
            <translation>正在销毁机器…</translation>
        </message>
        <message>
            <source>Terminated: billing stopped. You can launch again.</source>
            <translation>已销毁：计费已停止。你可以重新启动。</translation>
        </message>
        <message>
            <source>Cancelled. Anything already requested was terminated; the Instances page shows its state.</source>
            <translation>已取消。已请求的资源都已销毁；“实例”页显示其状态。</translation>
        </message>
    </context>
    <context>
        <name>Launcher</name>
        <message>
            <source>SSH key</source>
            <translation>SSH 密钥</translation>
        </message>
        <message>
            <source>Firewall (SSH from your address only)</source>
            <translation>防火墙（仅允许你的地址 SSH）</translation>
        </message>
        <message>
            <source>Request the machine</source>
            <translation>请求机器</translation>
        </message>
        <message>
            <source>Wait until it runs</source>
            <translation>等待机器运行</translation>
        </message>
        <message>
            <source>Wait until SSH answers</source>
            <translation>等待 SSH 响应</translation>
        </message>
        <message>
            <source>{cloud} quotes {quote} per hour ({price} {currency}, {source}), not the estimated {estimate}: the machine bills at the quote, and its spend and budget count from it.</source>
            <translation>{cloud}报价每小时 {quote}（{price} {currency}，{source}），不是估计的 {estimate}：机器按报价计费，花费和预算也按报价计算。</translation>
        </message>
        <message>
            <source>{cloud} quotes {quote} per hour ({price} {currency}, {source}): the machine bills at the quote, and its spend and budget count from it.</source>
            <translation>{cloud}报价每小时 {quote}（{price} {currency}，{source}）：机器按报价计费，花费和预算也按报价计算。</translation>
        </message>
        <message>
            <source>automatic: AWS Deep Learning AMI (or ami-…)</source>
            <translation>自动：AWS 深度学习 AMI（或 ami-…）</translation>
        </message>
        <message>
            <source>automatic: Tencent Cloud GPU image (or img-…)</source>
            <translation>自动：腾讯云 GPU 镜像（或 img-…）</translation>
        </message>
        <message>
            <source>automatic: Ubuntu with a GPU driver (or ubuntu_…_alibase_….vhd, m-…)</source>
            <translation>自动：带 GPU 驱动的 Ubuntu（或 ubuntu_…_alibase_….vhd、m-…）</translation>
        </message>
        <message>
            <source>An AMI id in {region}, such as ami-0123456789abcdef0. Empty: gpudesk picks the newest AWS Deep Learning AMI, which has the NVIDIA driver.</source>
            <translation>{region} 中的 AMI ID，例如 ami-0123456789abcdef0。留空：gpudesk 选用最新的 AWS 深度学习 AMI，其中带有 NVIDIA 驱动。</translation>
        </message>
        <message>
            <source>An image id in {region}, such as img-xxxxxxxx. Empty: gpudesk picks the newest public Tencent Cloud image with a GPU driver.</source>
            <translation>{region} 中的镜像 ID，例如 img-xxxxxxxx。留空：gpudesk 选用最新的带 GPU 驱动的腾讯云公共镜像。</translation>
        </message>
        <message>
            <source>An image id in {region}: a public image such as ubuntu_22_04_x64_20G_alibase_20240926.vhd, or one of your own such as m-xxxxxxxx. Empty: gpudesk picks the newest public Ubuntu image with a GPU driver, or a plain one and installs the driver at first boot.</source>
            <translation>{region} 中的镜像 ID：公共镜像如 ubuntu_22_04_x64_20G_alibase_20240926.vhd，或您自己的镜像如 m-xxxxxxxx。留空：gpudesk 选用最新的带 GPU 驱动的公共 Ubuntu 镜像，或选用不带驱动的镜像并在首次启动时安装驱动。</translation>
        </message>
        <message>
            <source>{image} is started as it is: gpudesk does not check it for a GPU driver. On an image without one (a plain Ubuntu) the GPU cannot be used until you install the NVIDIA driver; leave Image empty for {cloud}'s GPU image.</source>
            <translation>{image} 将按原样启动：gpudesk 不检查它是否带 GPU 驱动。在不带驱动的镜像（普通 Ubuntu）上，安装 NVIDIA 驱动之前无法使用 GPU；留空“镜像”即使用 {cloud} 的 GPU 镜像。</translation>
        </message>
        <message>
            <source>{image} is a plain Ubuntu image without a GPU driver: gpudesk installs the driver at first boot, as the console's auto-install does. It takes about {minutes} minutes or more after SSH answers; a GPU run started before then finds no driver.</source>
            <translation>{image} 是不带 GPU 驱动的普通 Ubuntu 镜像：gpudesk 会像控制台的自动安装那样在首次启动时安装驱动。SSH 可连接后大约还需 {minutes} 分钟或更久；在此之前启动的 GPU 运行会找不到驱动。</translation>
        </message>
        <message>
            <source>Image: {why}</source>
            <translation>镜像：{why}</translation>
        </message>
    </context>
    <context>
        <name>LocalDateAxis</name>
        <message>
            <source>en_US</source>
            <translation>zh_CN</translation>
        </message>
    </context>
    <context>
        <name>MachineCombo</name>
        <message>
            <source>{name} — {kind} ({address})</source>
            <translation>{name} — {kind}（{address}）</translation>
        </message>
        <message>
            <source>own machine</source>
            <translation>自有机器</translation>
        </message>
    </context>
    <context>
        <name>MainWindow</name>
        <message>
            <source>Plan</source>
            <translation>规划</translation>
        </message>
        <message>
            <source>Accounts</source>
            <translation>账号</translation>
        </message>
        <message>
            <source>Instances</source>
            <translation>实例</translation>
        </message>
        <message>
            <source>Run</source>
            <translation>运行</translation>
        </message>
        <message>
            <source>Watch</source>
            <translation>监控</translation>
        </message>
        <message>
            <source>Data</source>
            <translation>数据</translation>
        </message>
        <message>
            <source>Add your {provider} keys first.</source>
            <translation>请先添加你的 {provider} 密钥。</translation>
        </message>
        <message>
            <source>Live prices: {n} offers updated.</source>
            <translation>实时价格：已更新 {n} 个报价。</translation>
        </message>
        <message>
            <source>Sold out: {items}.</source>
            <translation>已售罄：{items}。</translation>
        </message>
        <message>
            <source>{n} regions did not answer.</source>
            <translation>{n} 个地域没有响应。</translation>
        </message>
        <message>
            <source>Asking the clouds for prices…</source>
            <translation>正在向云端查询价格…</translation>
        </message>
        <message>
            <source>Prices were not refreshed</source>
            <translation>价格未刷新</translation>
        </message>
        <message>
            <source>Machines are billing</source>
            <translation>有机器正在计费</translation>
        </message>
        <message>
            <source>{n} machine(s) from before are still billing. See Instances.</source>
            <translation>之前的 {n} 台机器仍在计费。请查看“实例”页。</translation>
        </message>
        <message>
            <source>This desktop has no system tray: billing alerts show here and on the Instances page.</source>
            <translation>此桌面没有系统托盘：计费提醒会显示在这里和“实例”页上。</translation>
        </message>
        <message>
            <source>● {n} billing ({rate}/h)</source>
            <translation>● {n} 台计费中（{rate}/小时）</translation>
        </message>
        <message>
            <source>The new budget rules did not reach {n} machine(s); they keep their previous rules: {why}</source>
            <translation>新的预算规则未能送达 {n} 台机器；它们保留之前的规则：{why}</translation>
        </message>
        <message>
            <source>gpudesk — plan, rent and train on cloud GPUs</source>
            <translation>gpudesk — 规划、租用云 GPU 并训练</translation>
        </message>
        <message>
            <source>&amp;File</source>
            <translation>文件(&amp;F)</translation>
        </message>
        <message>
            <source>&amp;Open plan…</source>
            <translation>打开方案(&amp;O)…</translation>
        </message>
        <message>
            <source>&amp;Save plan…</source>
            <translation>保存方案(&amp;S)…</translation>
        </message>
        <message>
            <source>&amp;Export offers CSV…</source>
            <translation>导出报价 CSV(&amp;E)…</translation>
        </message>
        <message>
            <source>&amp;Quit</source>
            <translation>退出(&amp;Q)</translation>
        </message>
        <message>
            <source>&amp;Preferences…</source>
            <translation>偏好设置(&amp;P)…</translation>
        </message>
        <message>
            <source>&amp;Theme</source>
            <translation>主题(&amp;T)</translation>
        </message>
        <message>
            <source>Light</source>
            <translation>浅色</translation>
        </message>
        <message>
            <source>Dark</source>
            <translation>深色</translation>
        </message>
        <message>
            <source>&amp;Go to page</source>
            <translation>转到页面(&amp;G)</translation>
        </message>
        <message>
            <source>Open &amp;log folder</source>
            <translation>打开日志文件夹(&amp;L)</translation>
        </message>
        <message>
            <source>&amp;View</source>
            <translation>视图(&amp;V)</translation>
        </message>
        <message>
            <source>&amp;Language</source>
            <translation>语言(&amp;L)</translation>
        </message>
        <message>
            <source>• {name}: {provider} {type}, stopped; its disk bills until it is terminated.</source>
            <translation>• {name}：{provider} {type}，已停止；它的磁盘在销毁前仍计费。</translation>
        </message>
        <message>
            <source>It cannot be stopped (its group would start another): only Terminate ends it, with its group.</source>
            <translation>它无法停止（它的组会再启动一台）：只有“销毁”能结束它，连同它的组。</translation>
        </message>
        <message>
            <source>• {name}: {provider} {type}, {state}, {rate}/h. {guard}</source>
            <translation>• {name}：{provider} {type}，{state}，{rate}/小时。{guard}</translation>
        </message>
        <message>
            <source>price not known</source>
            <translation>价格未知</translation>
        </message>
        <message>
            <source>Machines are still billing</source>
            <translation>仍有机器在计费</translation>
        </message>
        <message>
            <source>Quitting gpudesk does not stop them; they bill until they are stopped or terminated:</source>
            <translation>退出 gpudesk 不会停止它们；在被停止或销毁之前它们会一直计费：</translation>
        </message>
        <message>
            <source>Stop and quit</source>
            <translation>停止并退出</translation>
        </message>
        <message>
            <source>Stop {n} of them and quit</source>
            <translation>停止其中 {n} 台并退出</translation>
        </message>
        <message>
            <source>Terminate and quit</source>
            <translation>销毁并退出</translation>
        </message>
        <message>
            <source>Keep them running and quit</source>
            <translation>保持运行并退出</translation>
        </message>
        <message>
            <source>Stopping {n} machine(s) before quitting…</source>
            <translation>正在退出前停止 {n} 台机器…</translation>
        </message>
        <message>
            <source>Terminating {n} machine(s) before quitting…</source>
            <translation>正在退出前销毁 {n} 台机器…</translation>
        </message>
        <message>
            <source>Not every machine was stopped; gpudesk stays open</source>
            <translation>并非所有机器都已停止；gpudesk 保持打开</translation>
        </message>
        <message>
            <source>Not every machine was terminated; gpudesk stays open</source>
            <translation>并非所有机器都已销毁；gpudesk 保持打开</translation>
        </message>
        <message>
            <source>{ok} of {n} machine(s) stopped. These still bill:</source>
            <translation>{n} 台机器中已停止 {ok} 台。以下机器仍在计费：</translation>
        </message>
        <message>
            <source>{ok} of {n} machine(s) terminated. These still bill:</source>
            <translation>{n} 台机器中已销毁 {ok} 台。以下机器仍在计费：</translation>
        </message>
        <message>
            <source>• {name}: {why}</source>
            <translation>• {name}：{why}</translation>
        </message>
        <message>
            <source>{n} machine(s) from before are still billing: they ran on while gpudesk was closed. Stop or terminate on the Instances page what you no longer need.</source>
            <translation>之前的 {n} 台机器仍在计费：gpudesk 关闭期间它们一直在运行。请在“实例”页面停止或销毁不再需要的机器。</translation>
        </message>
        <message>
            <source>Show Instances</source>
            <translation>查看实例</translation>
        </message>
        <message>
            <source>System</source>
            <translation>跟随系统</translation>
        </message>
        <message>
            <source>&amp;Tools</source>
            <translation>工具(&amp;T)</translation>
        </message>
        <message>
            <source>&amp;Trace my model…</source>
            <translation>追踪我的模型(&amp;T)…</translation>
        </message>
        <message>
            <source>&amp;Refresh prices from my clouds</source>
            <translation>从我的云账号刷新价格(&amp;R)</translation>
        </message>
        <message>
            <source>&amp;Help</source>
            <translation>帮助(&amp;H)</translation>
        </message>
        <message>
            <source>&amp;About gpudesk</source>
            <translation>关于 gpudesk(&amp;A)</translation>
        </message>
        <message>
            <source>Opening…</source>
            <translation>正在打开…</translation>
        </message>
        <message>
            <source>Loading prices…</source>
            <translation>正在加载价格…</translation>
        </message>
        <message>
            <source>Prices from {date} ({days} days old)</source>
            <translation>价格日期 {date}（已过 {days} 天）</translation>
        </message>
        <message>
            <source>List prices from the bundled catalog; the oldest price is shown. Check before renting.</source>
            <translation>内置目录中的公开标价；此处显示最旧的价格日期。租用前请核实。</translation>
        </message>
    </context>
    <context>
        <name>MemoryBar</name>
        <message>
            <source>Weights</source>
            <translation>权重</translation>
        </message>
        <message>
            <source>Gradients</source>
            <translation>梯度</translation>
        </message>
        <message>
            <source>Optimizer states</source>
            <translation>优化器状态</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>激活值</translation>
        </message>
        <message>
            <source>Autocast weight cache</source>
            <translation>autocast 权重缓存</translation>
        </message>
        <message>
            <source>KV cache</source>
            <translation>KV 缓存</translation>
        </message>
        <message>
            <source>Communication buffers</source>
            <translation>通信缓冲区</translation>
        </message>
        <message>
            <source>CUDA context</source>
            <translation>CUDA 上下文</translation>
        </message>
        <message>
            <source>Total per GPU: {used}</source>
            <translation>每卡合计：{used}</translation>
        </message>
        <message>
            <source>{gpu} {capacity}</source>
            <translation>{gpu} {capacity}</translation>
        </message>
    </context>
    <context>
        <name>OffersModel</name>
        <message>
            <source>{hours} h</source>
            <translation>{hours} 小时</translation>
        </message>
        <message>
            <source>spot</source>
            <translation>竞价</translation>
        </message>
        <message>
            <source>on-demand</source>
            <translation>按量</translation>
        </message>
        <message>
            <source>Provider</source>
            <translation>云厂商</translation>
        </message>
        <message>
            <source>Instance</source>
            <translation>实例</translation>
        </message>
        <message>
            <source>Region</source>
            <translation>地域</translation>
        </message>
        <message>
            <source>GPUs</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Market</source>
            <translation>计费方式</translation>
        </message>
        <message>
            <source>{symbol}/h</source>
            <translation>{symbol}/小时</translation>
        </message>
        <message>
            <source>Est. hours</source>
            <translation>预计时长</translation>
        </message>
        <message>
            <source>Cost to finish</source>
            <translation>完成总费用</translation>
        </message>
        <message>
            <source>Headroom</source>
            <translation>剩余显存</translation>
        </message>
        <message>
            <source>Why</source>
            <translation>说明</translation>
        </message>
        <message>
            <source>bundled</source>
            <translation>内置</translation>
        </message>
        <message>
            <source>cached</source>
            <translation>缓存</translation>
        </message>
        <message>
            <source>estimate</source>
            <translation>估算</translation>
        </message>
        <message>
            <source>no bundled price</source>
            <translation>无内置价格</translation>
        </message>
        <message>
            <source>live</source>
            <translation>实时</translation>
        </message>
        <message>
            <source>No bundled price: {cloud} publishes no list price gpudesk can cite. Tools → Refresh prices from my clouds asks your {cloud} account for it; until then it has no cost to finish and ranks after the priced offers by cost.</source>
            <translation>无内置价格：{cloud} 没有公布 gpudesk 可以引用的目录价格。“工具 → 从我的云账号刷新价格”会用你的 {cloud} 账号查询价格；在此之前它没有完成费用，按费用排序时排在有价格的报价之后。</translation>
        </message>
        <message>
            <source>no spot price</source>
            <translation>无竞价报价</translation>
        </message>
        <message>
            <source>{price} ({source})</source>
            <translation>{price}（{source}）</translation>
        </message>
        <message>
            <source>{bytes} short</source>
            <translation>差 {bytes}</translation>
        </message>
    </context>
    <context>
        <name>OverviewPage</name>
        <message>
            <source>Machine</source>
            <translation>机器</translation>
        </message>
        <message>
            <source>GPUs</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Mean util</source>
            <translation>平均利用率</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>显存</translation>
        </message>
        <message>
            <source>Spend rate</source>
            <translation>花费速率</translation>
        </message>
        <message>
            <source>Last sample</source>
            <translation>最近采样</translation>
        </message>
        <message>
            <source>No machine is being watched. Connect to a running machine to see its GPUs here.</source>
            <translation>当前没有监控任何机器。连接一台运行中的机器即可在这里查看它的 GPU。</translation>
        </message>
        <message>
            <source>{:.0f} %</source>
            <translation>{:.0f} %</translation>
        </message>
        <message>
            <source>{used:.0f} / {total:.0f} GiB</source>
            <translation>{used:.0f} / {total:.0f} GiB</translation>
        </message>
        <message>
            <source>{used:.0f} GiB</source>
            <translation>{used:.0f} GiB</translation>
        </message>
        <message>
            <source>{rate} per hour</source>
            <translation>每小时 {rate}</translation>
        </message>
        <message>
            <source>never</source>
            <translation>从未</translation>
        </message>
        <message>
            <source>{n} s ago</source>
            <translation>{n} 秒前</translation>
        </message>
    </context>
    <context>
        <name>OwnMachineDialog</name>
        <message>
            <source>Add my own SSH machine</source>
            <translation>添加我自己的 SSH 机器</translation>
        </message>
        <message>
            <source>Name:</source>
            <translation>名称：</translation>
        </message>
        <message>
            <source>Host or address:</source>
            <translation>主机名或地址：</translation>
        </message>
        <message>
            <source>User:</source>
            <translation>用户：</translation>
        </message>
        <message>
            <source>SSH port:</source>
            <translation>SSH 端口：</translation>
        </message>
        <message>
            <source>Key file:</source>
            <translation>密钥文件：</translation>
        </message>
        <message>
            <source>Python:</source>
            <translation>Python：</translation>
        </message>
        <message>
            <source>Folder on the machine:</source>
            <translation>机器上的文件夹：</translation>
        </message>
        <message>
            <source>Bucket for run data:</source>
            <translation>运行数据存储桶：</translation>
        </message>
        <message>
            <source>Bucket region:</source>
            <translation>存储桶地域：</translation>
        </message>
        <message>
            <source>GPUs:</source>
            <translation>GPU 数：</translation>
        </message>
        <message>
            <source>count at login</source>
            <translation>登录时统计</translation>
        </message>
        <message>
            <source>e.g. lab-server (the host when empty)</source>
            <translation>例如 lab-server（留空则用主机名）</translation>
        </message>
        <message>
            <source>e.g. gpu01.lab.example.org or 10.0.0.5</source>
            <translation>例如 gpu01.lab.example.org 或 10.0.0.5</translation>
        </message>
        <message>
            <source>empty: use the keys of your ssh-agent</source>
            <translation>留空：使用 ssh-agent 中的密钥</translation>
        </message>
        <message>
            <source>The python runs use there, e.g. python3 or ~/venv/bin/python</source>
            <translation>训练在该机器上使用的 python，例如 python3 或 ~/venv/bin/python</translation>
        </message>
        <message>
            <source>Where gpudesk keeps projects, runs and its agent</source>
            <translation>gpudesk 在该机器上存放项目、运行和代理程序的位置</translation>
        </message>
        <message>
            <source>optional: s3://bucket/prefix, cos://bucket-appid/prefix or oss://bucket/prefix</source>
            <translation>可选：s3://bucket/prefix、cos://bucket-appid/prefix 或 oss://bucket/prefix</translation>
        </message>
        <message>
            <source>Runs on this machine keep their checkpoints, logs and outputs there, with short-lived keys limited to each run's folder, so a run outlives the machine. Checked before the machine is added.</source>
            <translation>这台机器上的运行会把检查点、日志和输出保存在那里，使用仅限于各运行文件夹的短期密钥，因此机器消失后运行仍可继续。添加机器前会先检查。</translation>
        </message>
        <message>
            <source>COS and OSS: e.g. ap-shanghai (AWS finds it)</source>
            <translation>COS 和 OSS：例如 ap-shanghai（AWS 会自动查到）</translation>
        </message>
        <message>
            <source>Browse…</source>
            <translation>浏览…</translation>
        </message>
        <message>
            <source>Forget the pinned key…</source>
            <translation>忘记已固定的密钥…</translation>
        </message>
        <message>
            <source>Test and add</source>
            <translation>测试并添加</translation>
        </message>
        <message>
            <source>Close</source>
            <translation>关闭</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>gpudesk logs in once to check the key and to pin the machine's host key (you compare its fingerprint), then adds the machine.</source>
            <translation>gpudesk 会先登录一次，检查密钥并固定机器的主机密钥（请核对其指纹），然后再添加这台机器。</translation>
        </message>
        <message>
            <source>SSH key file</source>
            <translation>SSH 密钥文件</translation>
        </message>
        <message>
            <source>enter the machine's address: its host name or IP address.</source>
            <translation>请输入机器的地址：主机名或 IP 地址。</translation>
        </message>
        <message>
            <source>an address has no spaces: enter one host name or IP address.</source>
            <translation>地址中不能有空格：请输入一个主机名或 IP 地址。</translation>
        </message>
        <message>
            <source>a machine named {name} is already in your list: choose another name, or remove that one first.</source>
            <translation>列表中已有名为 {name} 的机器：请换一个名称，或先移除那一台。</translation>
        </message>
        <message>
            <source>Logging in to {target}…</source>
            <translation>正在登录 {target}…</translation>
        </message>
        <message>
            <source>{python} was not found on {target}: enter the machine's python in the Python field (for example /usr/bin/python3 or a venv's bin/python), then test again.</source>
            <translation>在 {target} 上找不到 {python}：请在“Python”栏填写该机器上的 python（例如 /usr/bin/python3 或某个 venv 的 bin/python），然后重新测试。</translation>
        </message>
        <message>
            <source>Connected to {target}; its host key {fingerprint} is pinned.</source>
            <translation>已连接到 {target}；其主机密钥 {fingerprint} 已固定。</translation>
        </message>
        <message>
            <source>Python {version} is there, without torch: install it there ({python} -m pip install torch) or choose a venv's python.</source>
            <translation>机器上有 Python {version}，但没有 torch：请在那里安装（{python} -m pip install torch），或选择某个 venv 的 python。</translation>
        </message>
        <message>
            <source>Python {python}, torch {torch}, {gpus} GPU(s).</source>
            <translation>Python {python}，torch {torch}，{gpus} 块 GPU。</translation>
        </message>
        <message>
            <source>Its runs keep their data in {uri} ({region}).</source>
            <translation>它的运行数据保存在 {uri}（{region}）。</translation>
        </message>
        <message>
            <source>Added as {name}: Run and Watch use this profile.</source>
            <translation>已添加为 {name}：运行和监控页面会使用这份配置。</translation>
        </message>
        <message>
            <source>The pinned host key of {name} is forgotten. Test and add again, and compare the key it offers now with the machine's console before you pin it.</source>
            <translation>已忘记 {name} 的固定主机密钥。请重新测试并添加，并在固定前把它现在提供的密钥与机器控制台核对。</translation>
        </message>
        <message>
            <source>Not added: {why}</source>
            <translation>未添加：{why}</translation>
        </message>
    </context>
    <context>
        <name>OwnMachinesBox</name>
        <message>
            <source>Your own machines (SSH)</source>
            <translation>你自己的机器（SSH）</translation>
        </message>
        <message>
            <source>Add my own SSH machine…</source>
            <translation>添加我自己的 SSH 机器…</translation>
        </message>
        <message>
            <source>Forget its host key…</source>
            <translation>忘记其主机密钥…</translation>
        </message>
        <message>
            <source>For a machine that was rebuilt or reinstalled: its new host key is refused until the old pinned one is forgotten.</source>
            <translation>用于已重建或重装系统的机器：在忘记旧的固定密钥之前，它的新主机密钥会被拒绝。</translation>
        </message>
        <message>
            <source>ssh-agent</source>
            <translation>ssh-agent</translation>
        </message>
        <message>
            <source>The pinned host key of {name} is forgotten: the next connection shows the key it offers now, to compare and pin.</source>
            <translation>已忘记 {name} 的固定主机密钥：下次连接时会显示它现在提供的密钥，供你核对并固定。</translation>
        </message>
        <message>
            <source>{name} had no pinned host key.</source>
            <translation>{name} 没有固定的主机密钥。</translation>
        </message>
        <message>
            <source>Added {name}: its host key is pinned and Run and Watch use its profile.</source>
            <translation>已添加 {name}：主机密钥已固定，运行和监控页面会使用它的配置。</translation>
        </message>
        <message>
            <source>Remove {name}</source>
            <translation>移除 {name}</translation>
        </message>
        <message>
            <source>Remove {name} ({target}) from your machines? Nothing on the machine is touched; Run and Watch no longer offer it, and you can add it again.</source>
            <translation>要从你的机器中移除 {name}（{target}）吗？机器上的任何内容都不会被改动；“运行”和“监控”将不再提供它，你可以再次添加。</translation>
        </message>
        <message>
            <source>Removed {name} from your machines.</source>
            <translation>已从你的机器中移除 {name}。</translation>
        </message>
        <message>
            <source>Remove</source>
            <translation>移除</translation>
        </message>
    </context>
    <context>
        <name>PlanForm</name>
        <message>
            <source>SGD + momentum</source>
            <translation>SGD + 动量</translation>
        </message>
        <message>
            <source>Model source</source>
            <translation>模型来源</translation>
        </message>
        <message>
            <source>Preset</source>
            <translation>预设</translation>
        </message>
        <message>
            <source>Layers</source>
            <translation>层数</translation>
        </message>
        <message>
            <source>Hidden size</source>
            <translation>隐藏维度</translation>
        </message>
        <message>
            <source>Attention heads</source>
            <translation>注意力头数</translation>
        </message>
        <message>
            <source>KV heads</source>
            <translation>KV 头数</translation>
        </message>
        <message>
            <source>FFN size</source>
            <translation>FFN 维度</translation>
        </message>
        <message>
            <source>Vocabulary</source>
            <translation>词表大小</translation>
        </message>
        <message>
            <source>Parameters</source>
            <translation>参数量</translation>
        </message>
        <message>
            <source>Batch per GPU</source>
            <translation>每卡批大小</translation>
        </message>
        <message>
            <source>Sequence length</source>
            <translation>序列长度</translation>
        </message>
        <message>
            <source>Image size (px)</source>
            <translation>图像尺寸（像素）</translation>
        </message>
        <message>
            <source>Mode</source>
            <translation>模式</translation>
        </message>
        <message>
            <source>Generated tokens</source>
            <translation>生成 token 数</translation>
        </message>
        <message>
            <source>Precision</source>
            <translation>精度</translation>
        </message>
        <message>
            <source>Optimizer</source>
            <translation>优化器</translation>
        </message>
        <message>
            <source>Checkpointing</source>
            <translation>检查点</translation>
        </message>
        <message>
            <source>Attention</source>
            <translation>注意力</translation>
        </message>
        <message>
            <source>GPUs</source>
            <translation>GPU 数量</translation>
        </message>
        <message>
            <source>ZeRO stage</source>
            <translation>ZeRO 阶段</translation>
        </message>
        <message>
            <source>Offload</source>
            <translation>卸载</translation>
        </message>
        <message>
            <source>MFU (%)</source>
            <translation>MFU（%）</translation>
        </message>
        <message>
            <source>Hugging Face model</source>
            <translation>Hugging Face 模型</translation>
        </message>
        <message>
            <source>Or its config.json</source>
            <translation>或其 config.json</translation>
        </message>
        <message>
            <source>Fine-tuning</source>
            <translation>微调方式</translation>
        </message>
        <message>
            <source>LoRA rank</source>
            <translation>LoRA 秩</translation>
        </message>
        <message>
            <source>LoRA alpha</source>
            <translation>LoRA alpha</translation>
        </message>
        <message>
            <source>LoRA targets</source>
            <translation>LoRA 目标模块</translation>
        </message>
        <message>
            <source>Base weights</source>
            <translation>基座权重</translation>
        </message>
        <message>
            <source>FSDP</source>
            <translation>FSDP</translation>
        </message>
        <message>
            <source>Transformer shape</source>
            <translation>Transformer 结构</translation>
        </message>
        <message>
            <source>Parameter count</source>
            <translation>参数量</translation>
        </message>
        <message>
            <source>config.json</source>
            <translation>config.json</translation>
        </message>
        <message>
            <source>Full fine-tune</source>
            <translation>全量微调</translation>
        </message>
        <message>
            <source>LoRA</source>
            <translation>LoRA</translation>
        </message>
        <message>
            <source>QLoRA (4-bit base)</source>
            <translation>QLoRA（4 位基座）</translation>
        </message>
        <message>
            <source>Head only (frozen backbone)</source>
            <translation>仅训练输出头（冻结主干）</translation>
        </message>
        <message>
            <source>16-bit (not quantized)</source>
            <translation>16 位（不量化）</translation>
        </message>
        <message>
            <source>NF4</source>
            <translation>NF4</translation>
        </message>
        <message>
            <source>NF4 + double quantization</source>
            <translation>NF4 + 双重量化</translation>
        </message>
        <message>
            <source>FP4</source>
            <translation>FP4</translation>
        </message>
        <message>
            <source>int8 (LLM.int8)</source>
            <translation>int8（LLM.int8）</translation>
        </message>
        <message>
            <source>None</source>
            <translation>无</translation>
        </message>
        <message>
            <source>Full shard</source>
            <translation>全分片</translation>
        </message>
        <message>
            <source>Shard gradients + optimizer</source>
            <translation>分片梯度 + 优化器</translation>
        </message>
        <message>
            <source>Hybrid (shard within a node)</source>
            <translation>混合（节点内分片）</translation>
        </message>
        <message>
            <source>Eager (keeps the score matrix)</source>
            <translation>Eager（保留注意力分数矩阵）</translation>
        </message>
        <message>
            <source>SDPA (PyTorch default)</source>
            <translation>SDPA（PyTorch 默认）</translation>
        </message>
        <message>
            <source>FlashAttention-2</source>
            <translation>FlashAttention-2</translation>
        </message>
        <message>
            <source>org/name, e.g. Qwen/Qwen2-0.5B</source>
            <translation>组织/名称，例如 Qwen/Qwen2-0.5B</translation>
        </message>
        <message>
            <source>Fetch</source>
            <translation>获取</translation>
        </message>
        <message>
            <source>Downloads only the model's config.json (its shape, never the weights) and keeps it: the next time needs no network.</source>
            <translation>只下载模型的 config.json（它的结构，从不下载权重）并保存下来：下次无需联网。</translation>
        </message>
        <message>
            <source>Load config.json…</source>
            <translation>加载 config.json…</translation>
        </message>
        <message>
            <source>{name} — load another…</source>
            <translation>{name} — 加载其他…</translation>
        </message>
        <message>
            <source>q,v or attention or all-linear</source>
            <translation>q,v 或 attention 或 all-linear</translation>
        </message>
        <message>
            <source>Train</source>
            <translation>训练</translation>
        </message>
        <message>
            <source>Inference</source>
            <translation>推理</translation>
        </message>
        <message>
            <source>0 — plain data parallel</source>
            <translation>0 — 普通数据并行</translation>
        </message>
        <message>
            <source>1 — shard optimizer</source>
            <translation>1 — 切分优化器状态</translation>
        </message>
        <message>
            <source>2 — + gradients</source>
            <translation>2 — + 梯度</translation>
        </message>
        <message>
            <source>3 — + parameters</source>
            <translation>3 — + 参数</translation>
        </message>
        <message>
            <source>Gradient checkpointing</source>
            <translation>梯度检查点</translation>
        </message>
        <message>
            <source>CPU offload (ZeRO / FSDP)</source>
            <translation>CPU 卸载（ZeRO / FSDP）</translation>
        </message>
        <message>
            <source>e.g. 1e9 or 2.5B</source>
            <translation>如 1e9 或 2.5B</translation>
        </message>
        <message>
            <source>e.g. 7e9 or 7B</source>
            <translation>如 7e9 或 7B</translation>
        </message>
        <message>
            <source>Model FLOPs utilisation you expect; 30-50% is typical</source>
            <translation>预期的模型算力利用率（MFU），通常为 30–50%</translation>
        </message>
        <message>
            <source>A Hugging Face model id is org/name, for example Qwen/Qwen2-0.5B.</source>
            <translation>Hugging Face 模型 ID 的格式是 组织/名称，例如 Qwen/Qwen2-0.5B。</translation>
        </message>
        <message>
            <source>Tokens to generate</source>
            <translation>要生成的 token 数</translation>
        </message>
        <message>
            <source>Training images</source>
            <translation>训练图像数</translation>
        </message>
        <message>
            <source>Training tokens</source>
            <translation>训练 token 数</translation>
        </message>
        <message>
            <source>custom (from {preset})</source>
            <translation>自定义（基于 {preset}）</translation>
        </message>
    </context>
    <context>
        <name>PlanPage</name>
        <message>
            <source>Memory per GPU</source>
            <translation>每卡显存</translation>
        </message>
        <message>
            <source>Selected offer</source>
            <translation>所选报价</translation>
        </message>
        <message>
            <source>Offers, cheapest to finish first</source>
            <translation>报价（按完成总费用从低到高）</translation>
        </message>
        <message>
            <source>Machine</source>
            <translation>机器</translation>
        </message>
        <message>
            <source>GPUs</source>
            <translation>GPU</translation>
        </message>
        <message>
            <source>Price</source>
            <translation>价格</translation>
        </message>
        <message>
            <source>Memory</source>
            <translation>显存</translation>
        </message>
        <message>
            <source>Est. time</source>
            <translation>预计时长</translation>
        </message>
        <message>
            <source>Cost to finish</source>
            <translation>完成总费用</translation>
        </message>
        <message>
            <source>Launch this machine…</source>
            <translation>启动这台机器…</translation>
        </message>
        <message>
            <source>Spot</source>
            <translation>竞价实例</translation>
        </message>
        <message>
            <source>Sort by</source>
            <translation>排序</translation>
        </message>
        <message>
            <source>any</source>
            <translation>不限</translation>
        </message>
        <message>
            <source>enter a price such as 2.5, or leave it empty</source>
            <translation>请输入价格，例如 2.5，或留空</translation>
        </message>
        <message>
            <source>cost to finish</source>
            <translation>完成总费用</translation>
        </message>
        <message>
            <source>price per hour</source>
            <translation>每小时价格</translation>
        </message>
        <message>
            <source>headroom</source>
            <translation>剩余显存</translation>
        </message>
        <message>
            <source>hours</source>
            <translation>时长</translation>
        </message>
        <message>
            <source>Cannot load the offer catalog</source>
            <translation>无法加载报价目录</translation>
        </message>
        <message>
            <source>Cannot read the run's history</source>
            <translation>无法读取该运行的历史</translation>
        </message>
        <message>
            <source>Cannot read the spot price history</source>
            <translation>无法读取抢占式价格历史</translation>
        </message>
        <message>
            <source>All providers</source>
            <translation>全部云厂商</translation>
        </message>
        <message>
            <source>All regions</source>
            <translation>全部地域</translation>
        </message>
        <message>
            <source>Max {symbol}/h</source>
            <translation>每小时最高 {symbol}</translation>
        </message>
        <message>
            <source>Enter a model to see what it needs.</source>
            <translation>输入模型即可查看所需资源。</translation>
        </message>
        <message>
            <source>This offer does not fit the job.</source>
            <translation>此报价不适合这个任务。</translation>
        </message>
        <message>
            <source>{price}/h (on-demand price: no spot price known)</source>
            <translation>{price}/小时（按需价格：尚无已知的竞价价格）</translation>
        </message>
        <message>
            <source>{price}/h ({market})</source>
            <translation>{price}/小时（{market}）</translation>
        </message>
        <message>
            <source>{cost} expected ({low}–{high}); {plain} if never interrupted</source>
            <translation>预期 {cost}（{low}–{high}）；若从不中断为 {plain}</translation>
        </message>
        <message>
            <source>Cannot save the plan</source>
            <translation>无法保存方案</translation>
        </message>
        <message>
            <source>Save plan</source>
            <translation>保存方案</translation>
        </message>
        <message>
            <source>Plans (*.json)</source>
            <translation>方案文件 (*.json)</translation>
        </message>
        <message>
            <source>Cannot open the plan</source>
            <translation>无法打开方案</translation>
        </message>
        <message>
            <source>Open plan</source>
            <translation>打开方案</translation>
        </message>
        <message>
            <source>Cannot fetch the config.json</source>
            <translation>无法获取 config.json</translation>
        </message>
        <message>
            <source>Cannot read the config.json</source>
            <translation>无法读取 config.json</translation>
        </message>
        <message>
            <source>Load a Hugging Face config.json</source>
            <translation>加载 Hugging Face config.json</translation>
        </message>
        <message>
            <source>Model configs (*.json)</source>
            <translation>模型配置 (*.json)</translation>
        </message>
        <message>
            <source>Cannot export the offers</source>
            <translation>无法导出报价</translation>
        </message>
        <message>
            <source>Export offers</source>
            <translation>导出报价</translation>
        </message>
        <message>
            <source>CSV files (*.csv)</source>
            <translation>CSV 文件 (*.csv)</translation>
        </message>
    </context>
    <context>
        <name>Planner</name>
        <message>
            <source>fits: {used} of {capacity} per GPU ({headroom} free)</source>
            <translation>可放下：每卡 {used} / {capacity}（剩余 {headroom}）</translation>
        </message>
        <message>
            <source>needs {used} per GPU but the {gpu} has {capacity}</source>
            <translation>每卡需要 {used}，但 {gpu} 只有 {capacity}</translation>
        </message>
        <message>
            <source>the {gpu} has no {precision} support</source>
            <translation>{gpu} 不支持 {precision}</translation>
        </message>
        <message>
            <source>no spot price known for this offer</source>
            <translation>此报价没有已知的竞价价格</translation>
        </message>
        <message>
            <source>No model this size exists: {params} parameters. The largest ever reported has 174 trillion (1.74e14, BaGuaLu, 2022) and openly released ones about 1.6 trillion; its 16-bit weights alone would take {weights}. Check the number (an exponent too many?).</source>
            <translation>不存在这么大的模型：{params} 个参数。已报道的最大模型有 174 万亿（1.74e14，BaGuaLu，2022），公开发布的约 1.6 万亿；仅其 16 位权重就要占 {weights}。请检查这个数字（指数是否多写了？）。</translation>
        </message>
        <message>
            <source>Nothing fits: none of the {n} offers shown can hold this job as it is set up. What would:</source>
            <translation>放不下：所显示的 {n} 个报价都装不下按当前设置的这项任务。以下做法可以：</translation>
        </message>
        <message>
            <source>• {change}: fits on {machine} ({count} × {gpu}, {provider}), {used} of {capacity} per GPU.</source>
            <translation>• {change}：可放入 {machine}（{count} × {gpu}，{provider}），每卡 {capacity} 中用 {used}。</translation>
        </message>
        <message>
            <source>• More GPUs: {count} × {gpu} (the largest GPU offered) with {strategy}, {used} per GPU.</source>
            <translation>• 更多 GPU：{count} × {gpu}（所提供的最大 GPU），采用 {strategy}，每卡 {used}。</translation>
        </message>
        <message>
            <source>  That is more than the {most} GPUs of the largest offer: {machines} machines in one multi-node run.</source>
            <translation>  这超过了最大报价的 {most} 张 GPU：需要 {machines} 台机器做一次多节点运行。</translation>
        </message>
        <message>
            <source>• More GPUs: not even {count} × {gpu} (the largest GPU offered) can hold it.</source>
            <translation>• 更多 GPU：即使 {count} × {gpu}（所提供的最大 GPU）也装不下。</translation>
        </message>
        <message>
            <source>Tried, fits no offer shown: {changes}.</source>
            <translation>已尝试，但放不进所显示的任何报价：{changes}。</translation>
        </message>
        <message>
            <source>• No change gpudesk knows makes it fit an offer shown: a smaller model, batch or sequence.</source>
            <translation>• gpudesk 所知的改动都无法让它放进所显示的报价：请用更小的模型、批量或序列长度。</translation>
        </message>
        <message>
            <source>Gradient checkpointing</source>
            <translation>梯度检查点</translation>
        </message>
        <message>
            <source>ZeRO-1</source>
            <translation>ZeRO-1</translation>
        </message>
        <message>
            <source>ZeRO-2</source>
            <translation>ZeRO-2</translation>
        </message>
        <message>
            <source>ZeRO-3</source>
            <translation>ZeRO-3</translation>
        </message>
        <message>
            <source>ZeRO-3 with CPU offload</source>
            <translation>ZeRO-3 + CPU 卸载</translation>
        </message>
        <message>
            <source>FSDP shard grad+optimizer</source>
            <translation>FSDP 分片梯度+优化器</translation>
        </message>
        <message>
            <source>FSDP full shard</source>
            <translation>FSDP 全分片</translation>
        </message>
        <message>
            <source>FSDP full shard with CPU offload</source>
            <translation>FSDP 全分片 + CPU 卸载</translation>
        </message>
        <message>
            <source>LoRA</source>
            <translation>LoRA</translation>
        </message>
        <message>
            <source>QLoRA (4-bit NF4 base)</source>
            <translation>QLoRA（4 位 NF4 基座）</translation>
        </message>
        <message>
            <source>8-bit weights</source>
            <translation>8 位权重</translation>
        </message>
        <message>
            <source>4-bit NF4 weights</source>
            <translation>4 位 NF4 权重</translation>
        </message>
        <message>
            <source>plain data parallel</source>
            <translation>普通数据并行</translation>
        </message>
        <message>
            <source>tensor parallel</source>
            <translation>张量并行</translation>
        </message>
    </context>
    <context>
        <name>ProviderError</name>
        <message>
            <source>No {provider} account is set up yet. Add your keys on the Accounts page (or: gpudesk accounts add {provider_id} ...).</source>
            <translation>还没有设置 {provider} 账号。请在“账号”页添加密钥（或：gpudesk accounts add {provider_id} ...）。</translation>
        </message>
        <message>
            <source>'{provider}' is not a cloud gpudesk can rent from; choose aws, tencent or aliyun.</source>
            <translation>“{provider}”不是 gpudesk 可以租用的云；请选择 aws、tencent 或 aliyun。</translation>
        </message>
        <message>
            <source>The machine {cloud_id} was created but is still {state} after {minutes} minutes. It is listed on the Instances page; terminate it there if you no longer want it.</source>
            <translation>机器 {cloud_id} 已创建，但 {minutes} 分钟后仍处于 {state}。它列在“实例”页上；如果不再需要，请在那里销毁。</translation>
        </message>
        <message>
            <source>The machine {cloud_id} runs (and bills) but SSH on {address} did not answer within {minutes} minutes. It is listed on the Instances page.</source>
            <translation>机器 {cloud_id} 正在运行（并计费），但 {address} 上的 SSH 在 {minutes} 分钟内没有响应。它列在“实例”页上。</translation>
        </message>
        <message>
            <source>No launched machine '{ref}' in the ledger to wait for.</source>
            <translation>账本中没有可等待的已启动机器“{ref}”。</translation>
        </message>
        <message>
            <source>The spot machine {cloud_id} ended while starting in {where}; spot capacity may have been reclaimed. The cloud said: {reason}</source>
            <translation>竞价实例 {cloud_id} 在 {where} 启动时结束；竞价资源可能已被回收。云平台的说明：{reason}</translation>
        </message>
        <message>
            <source>The machine {cloud_id} could not be started in {where}. The cloud said: {reason}</source>
            <translation>机器 {cloud_id} 未能在 {where} 启动。云平台的说明：{reason}</translation>
        </message>
        <message>
            <source>(no reason given)</source>
            <translation>（未给出原因）</translation>
        </message>
        <message>
            <source>it vanished while starting and the cloud no longer lists it</source>
            <translation>它在启动时消失了，云端已不再列出它</translation>
        </message>
        <message>
            <source>The cloud gave no price for {instance_type} in {region} ({detail}), so nothing was started: gpudesk does not start a machine whose spend it cannot count. Try again in a moment, or choose an offer that shows a price.</source>
            <translation>云没有给出 {instance_type} 在 {region} 的价格（{detail}），因此没有启动任何机器：gpudesk 不会启动无法计算花费的机器。请稍后再试，或选择一个显示价格的报价。</translation>
        </message>
        <message>
            <source>{provider} does not sell {instance_type} in {zone} now: {reason}</source>
            <translation>{provider} 目前在 {zone} 不售卖 {instance_type}：{reason}</translation>
        </message>
        <message>
            <source>No machine '{ref}' in the ledger; `gpudesk ls` lists them.</source>
            <translation>账本中没有机器“{ref}”；用 `gpudesk ls` 查看列表。</translation>
        </message>
        <message>
            <source>{name} has no gpudesk security group to change (it is your own machine, or it was adopted without one).</source>
            <translation>{name} 没有可修改的 gpudesk 安全组（它是你自己的机器，或被接管时没有安全组）。</translation>
        </message>
        <message>
            <source>gpudesk cannot change the SSH rule on {provider} machines.</source>
            <translation>gpudesk 无法修改 {provider} 机器的 SSH 规则。</translation>
        </message>
        <message>
            <source>{name} is your own machine: gpudesk cannot {action} it. Remove it from the list instead.</source>
            <translation>{name} 是你自己的机器：gpudesk 无法 {action} 它。请改为从列表中移除。</translation>
        </message>
        <message>
            <source>{name} has no cloud machine (state {state}); there is nothing to {action}.</source>
            <translation>{name} 没有云端机器（状态 {state}）；没有可以 {action} 的对象。</translation>
        </message>
        <message>
            <source>'{host}' is not a host name or address, or port {port} is not 1-65535.</source>
            <translation>'{host}' 不是主机名或地址，或端口 {port} 不在 1-65535 之间。</translation>
        </message>
        <message>
            <source>A machine named {name} is already in your list: choose another name, or remove that one first.</source>
            <translation>列表中已有名为 {name} 的机器：请换一个名称，或先移除那一台。</translation>
        </message>
        <message>
            <source>Alibaba Cloud</source>
            <translation>阿里云</translation>
        </message>
        <message>
            <source>Alibaba Cloud does not know the AccessKey ID {key_id}: it is mistyped, or the key was deleted or disabled. Check it in the RAM console and add it again.</source>
            <translation>阿里云不认识 AccessKey ID {key_id}：可能输错了，或该密钥已被删除或禁用。请在 RAM 控制台核对后重新添加。</translation>
        </message>
        <message>
            <source>Alibaba Cloud knows the AccessKey ID {key_id} but the secret does not match it. Paste the AccessKey secret again.</source>
            <translation>阿里云认得 AccessKey ID {key_id}，但 Secret 与之不匹配。请重新粘贴 AccessKey Secret。</translation>
        </message>
        <message>
            <source>The keys are valid but the RAM user may not {action}. Ask the account owner to grant {permission} (for example the AliyunECSFullAccess policy).</source>
            <translation>密钥有效，但该 RAM 用户无权{action}。请让账号所有者授予 {permission}（例如 AliyunECSFullAccess 策略）。</translation>
        </message>
        <message>
            <source>The keys are valid but the RAM user may not {action}. Ask the account owner to grant {permission} (for example the AliyunVPCFullAccess policy): gpudesk keeps its machines in a VPC of its own.</source>
            <translation>密钥有效，但该 RAM 用户无权{action}。请让账号所有者授予 {permission}（例如 AliyunVPCFullAccess 策略）：gpudesk 把它的机器放在自己的专有网络（VPC）中。</translation>
        </message>
        <message>
            <source>gpudesk launches only behind its own security group, which opens SSH to your address alone; give the address (--allow-from) so it can make one.</source>
            <translation>gpudesk 只在它自己的安全组后启动机器，该安全组只对你的地址开放 SSH；请提供地址（--allow-from）以便创建。</translation>
        </message>
        <message>
            <source>Alibaba Cloud refused to bill a new machine: the account balance is too low or the account is not verified ({detail}). Top up or finish real-name verification in the console.</source>
            <translation>阿里云拒绝为新机器计费：账户余额不足或账号未完成实名认证（{detail}）。请在控制台充值或完成实名认证。</translation>
        </message>
        <message>
            <source>Request more in the Alibaba Cloud console under ECS → Quota Center (privileges &amp; quotas); approval often takes a day.</source>
            <translation>请在阿里云控制台的 ECS → 配额中心（权益与配额）申请提高配额；审批通常需要一天。</translation>
        </message>
        <message>
            <source>The gpudesk network {name} in {region} is still being created; try again in a minute.</source>
            <translation>{region} 中的 gpudesk 网络 {name} 仍在创建中；请一分钟后再试。</translation>
        </message>
        <message>
            <source>stopped with StopCharging: CPU, GPU and memory no longer bill; the system disk still bills, and the public address may change on restart</source>
            <translation>已以停机不收费（StopCharging）方式停止：CPU、GPU 和内存不再计费；系统盘仍会计费，重启后公网地址可能改变</translation>
        </message>
        <message>
            <source>stopped with KeepCharging ({why}): the machine bills as if running until it is terminated</source>
            <translation>已以停机继续收费（KeepCharging）方式停止（{why}）：在销毁之前，机器会像运行时一样计费</translation>
        </message>
        <message>
            <source>Alibaba Cloud cannot stop charging {name} while it is stopped ({why}): a stop keeps billing it at its full price. Terminate it to end the bill.</source>
            <translation>阿里云无法在 {name} 停止期间停止计费（{why}）：停止后仍按全价计费。请销毁它以结束计费。</translation>
        </message>
        <message>
            <source>{name} is already stopped, but Alibaba Cloud still charges it as if it were running ({mode}): a shutdown from inside the machine does not stop the charge. Start it and stop it from gpudesk, or terminate it, to end the bill.</source>
            <translation>{name} 已经停止，但阿里云仍像运行时一样对它计费（{mode}）：在机器内部关机并不会停止计费。请先启动它再从 gpudesk 停止，或者销毁它，以结束计费。</translation>
        </message>
        <message>
            <source>as asked</source>
            <translation>按要求</translation>
        </message>
        <message>
            <source>a subscription machine does not get StopCharging</source>
            <translation>包年包月的机器不支持停机不收费（StopCharging）</translation>
        </message>
        <message>
            <source>a machine outside a VPC does not get StopCharging</source>
            <translation>不在 VPC 中的机器不支持停机不收费（StopCharging）</translation>
        </message>
        <message>
            <source>this type ({instance_type}) does not allow StopCharging, as types with local SSDs do not</source>
            <translation>该规格（{instance_type}）不支持停机不收费（StopCharging），带本地 SSD 的规格都不支持</translation>
        </message>
        <message>
            <source>The image {image} needs a disk of at least {minimum} GB; {disk_gb} GB is too small.</source>
            <translation>镜像 {image} 需要至少 {minimum} GB 的磁盘；{disk_gb} GB 太小。</translation>
        </message>
        <message>
            <source>{provider} rejected the keys: the key id or secret is wrong, or the key was deleted. Check them in the {provider} console and add them again.</source>
            <translation>{provider} 拒绝了这些密钥：密钥 ID 或密钥错误，或密钥已被删除。请在 {provider} 控制台检查后重新添加。</translation>
        </message>
        <message>
            <source>The keys are valid but may not {action}. Ask the account owner to grant {permission} to this user.</source>
            <translation>密钥有效，但没有权限 {action}。请让账号所有者给此用户授予 {permission}。</translation>
        </message>
        <message>
            <source>{provider} refused the request because this computer's clock is off. Turn on automatic time setting and try again.</source>
            <translation>{provider} 拒绝了请求，因为这台电脑的时钟不准。请打开自动设置时间后重试。</translation>
        </message>
        <message>
            <source>Could not reach {provider} ({detail}). Check the internet connection or proxy and try again.</source>
            <translation>无法连接 {provider}（{detail}）。请检查网络连接或代理后重试。</translation>
        </message>
        <message>
            <source>Your {provider} quota "{quota}" in {region} is too small for {instance_type}. {how}</source>
            <translation>你在 {region} 的 {provider} 配额“{quota}”不足以运行 {instance_type}。{how}</translation>
        </message>
        <message>
            <source>{provider} has no {instance_type} free in {where} right now.</source>
            <translation>{provider} 在 {where} 目前没有空闲的 {instance_type}。</translation>
        </message>
        <message>
            <source>Your maximum spot price {max_price} is below the market price in {where}; raise it or use on-demand.</source>
            <translation>你的最高竞价 {max_price} 低于 {where} 的市场价格；请提高出价或使用按量计费。</translation>
        </message>
        <message>
            <source>{provider} is limiting the request rate; gpudesk retried and gave up. Wait a minute and try again.</source>
            <translation>{provider} 正在限制请求频率；gpudesk 重试后放弃了。请等一分钟再试。</translation>
        </message>
        <message>
            <source>{provider} has no {what} called {name} in {region}.</source>
            <translation>{provider} 在 {region} 没有名为 {name} 的 {what}。</translation>
        </message>
        <message>
            <source>{provider} refused the request: {detail}</source>
            <translation>{provider} 拒绝了请求：{detail}</translation>
        </message>
        <message>
            <source>Request more in the AWS console under Service Quotas → Amazon EC2 (quota code {code}); approval often takes a day.</source>
            <translation>请在 AWS 控制台的 Service Quotas → Amazon EC2 中申请提高配额（配额代码 {code}）；审批通常需要一天。</translation>
        </message>
        <message>
            <source>Request more in the Tencent Cloud console under CVM → Quotas, or open a ticket; approval often takes a day.</source>
            <translation>请在腾讯云控制台的 云服务器 → 配额 中申请，或提交工单；审批通常需要一天。</translation>
        </message>
        <message>
            <source>'{region}' is not a {provider} region gpudesk knows; choose one of {choices}.</source>
            <translation>'{region}' 不是 gpudesk 已知的 {provider} 地域；请从 {choices} 中选择。</translation>
        </message>
        <message>
            <source>'{instance_type}' is not a GPU instance type gpudesk knows for {provider}.</source>
            <translation>'{instance_type}' 不是 gpudesk 已知的 {provider} GPU 机型。</translation>
        </message>
        <message>
            <source>The maximum spot price must be above zero (got {max_price}).</source>
            <translation>最高竞价必须大于零（收到 {max_price}）。</translation>
        </message>
        <message>
            <source>A maximum price only applies to spot machines; add --spot.</source>
            <translation>最高价格只适用于竞价机器；请加上 --spot。</translation>
        </message>
        <message>
            <source>SSH must be opened to one address only (like 203.0.113.7/32), not '{cidr}'.</source>
            <translation>SSH 只能对单个地址开放（如 203.0.113.7/32），不能是 '{cidr}'。</translation>
        </message>
        <message>
            <source>The disk must be between {minimum} and {maximum} GB (got {disk_gb}).</source>
            <translation>磁盘必须在 {minimum} 到 {maximum} GB 之间（收到 {disk_gb}）。</translation>
        </message>
        <message>
            <source>machine</source>
            <translation>机器</translation>
        </message>
        <message>
            <source>image</source>
            <translation>镜像</translation>
        </message>
        <message>
            <source>key pair</source>
            <translation>密钥对</translation>
        </message>
        <message>
            <source>key pairs</source>
            <translation>密钥对</translation>
        </message>
        <message>
            <source>security group</source>
            <translation>安全组</translation>
        </message>
        <message>
            <source>security groups</source>
            <translation>安全组</translation>
        </message>
        <message>
            <source>default VPC</source>
            <translation>默认 VPC</translation>
        </message>
        <message>
            <source>subnet</source>
            <translation>子网</translation>
        </message>
        <message>
            <source>vSwitch</source>
            <translation>交换机</translation>
        </message>
        <message>
            <source>vSwitches</source>
            <translation>交换机</translation>
        </message>
        <message>
            <source>region</source>
            <translation>地域</translation>
        </message>
        <message>
            <source>availability zone</source>
            <translation>可用区</translation>
        </message>
        <message>
            <source>resource</source>
            <translation>资源</translation>
        </message>
        <message>
            <source>launch template</source>
            <translation>启动模板</translation>
        </message>
        <message>
            <source>Auto Scaling group</source>
            <translation>弹性伸缩组</translation>
        </message>
        <message>
            <source>GPU deep-learning image</source>
            <translation>GPU 深度学习镜像</translation>
        </message>
        <message>
            <source>public Ubuntu image with a GPU driver</source>
            <translation>带 GPU 驱动的公共 Ubuntu 镜像</translation>
        </message>
        <message>
            <source>spot instances</source>
            <translation>竞价实例</translation>
        </message>
        <message>
            <source>spot instances of this type</source>
            <translation>这种类型的竞价实例</translation>
        </message>
        <message>
            <source>prepaid instances</source>
            <translation>包年包月实例</translation>
        </message>
        <message>
            <source>CVM instances</source>
            <translation>CVM 实例</translation>
        </message>
        <message>
            <source>Tencent Cloud</source>
            <translation>腾讯云</translation>
        </message>
        <message>
            <source>Tencent Cloud quotes no on-demand price for {instance_type} in {where} to bid with; give a maximum spot price.</source>
            <translation>腾讯云没有给出 {instance_type} 在 {where} 的按量价格作为出价依据；请给出最高竞价。</translation>
        </message>
        <message>
            <source>stopped with STOP_CHARGING: CPU, GPU and memory no longer bill; the cloud disks, bandwidth and image still do.</source>
            <translation>已以停机不收费（STOP_CHARGING）方式停止：CPU、GPU 和内存不再计费；云硬盘、带宽和镜像仍会计费。</translation>
        </message>
        <message>
            <source>stopped with {mode}: Tencent Cloud bills the machine as if it were running until it is started and stopped without charge, or terminated.</source>
            <translation>已以 {mode} 方式停止：在以不收费方式重新启动再停止之前，或在销毁之前，腾讯云会像运行时一样对这台机器计费。</translation>
        </message>
        <message>
            <source>Tencent Cloud cannot stop charging {name} while it is stopped ({why}): a stop keeps billing it at its full price. Terminate it to end the bill.</source>
            <translation>腾讯云无法在 {name} 停止期间停止计费（{why}）：停止后仍按全价计费。请销毁它以结束计费。</translation>
        </message>
        <message>
            <source>{name} is already stopped, but Tencent Cloud still charges it as if it were running ({mode}): a shutdown from inside the machine does not stop the charge. Start it and stop it from gpudesk, or terminate it, to end the bill.</source>
            <translation>{name} 已经停止，但腾讯云仍像运行时一样对它计费（{mode}）：在机器内部关机并不会停止计费。请先启动它再从 gpudesk 停止，或者销毁它，以结束计费。</translation>
        </message>
        <message>
            <source>CVM does not offer it for this machine</source>
            <translation>CVM 不为这台机器提供此功能</translation>
        </message>
        <message>
            <source>Could not find this computer's public address ({detail}), so SSH cannot be limited to it. Pass --allow-from YOUR.ADDRESS/32 (the Launch dialog has a field).</source>
            <translation>无法获得这台电脑的公网地址（{detail}），因此无法把 SSH 限制到该地址。请传入 --allow-from 你的地址/32（“启动”对话框中有此字段）。</translation>
        </message>
        <message>
            <source>A budget must be more than 0 (got {amount}).</source>
            <translation>预算必须大于 0（收到 {amount}）。</translation>
        </message>
        <message>
            <source>'{user}' is not a login name (lowercase letters, digits, '_' and '-', starting with a letter or '_', at most 32 characters).</source>
            <translation>“{user}”不是登录名（只能用小写字母、数字、“_”和“-”，以字母或“_”开头，最多 32 个字符）。</translation>
        </message>
        <message>
            <source>The AWS price list for {region} could not be read ({detail}); its bundled prices are shown, dated.</source>
            <translation>无法读取 {region} 的 AWS 价目表（{detail}）；显示的是随附的、带日期的价格。</translation>
        </message>
        <message>
            <source>{account}: not checked, the keyring did not give its keys ({why}). Machines there may be billing unseen; unlock the keyring and check again.</source>
            <translation>{account}：未检查，密钥环没有给出其密钥（{why}）。那里的机器可能在未被察觉地计费；请解锁密钥环后再检查。</translation>
        </message>
        <message>
            <source>{account}: not checked, its keys are no longer in the keyring. Machines there may be billing unseen; add the keys again on the Accounts page.</source>
            <translation>{account}：未检查，其密钥已不在密钥环中。那里的机器可能在未被察觉地计费；请在“账号”页重新添加密钥。</translation>
        </message>
        <message>
            <source>{account}: not checked, the cloud did not answer ({why}). Machines there may be billing unseen; gpudesk checks again in a few minutes.</source>
            <translation>{account}：未检查，云没有响应（{why}）。那里的机器可能在未被察觉地计费；gpudesk 会在几分钟后再次检查。</translation>
        </message>
        <message>
            <source>At its budget a machine can be stopped or terminated, not '{action}'.</source>
            <translation>达到预算时，机器只能被停止或销毁，不能“{action}”。</translation>
        </message>
        <message>
            <source>A budget is in USD or CNY, not '{currency}'.</source>
            <translation>预算的货币只能是 USD 或 CNY，不能是“{currency}”。</translation>
        </message>
        <message>
            <source>{name} is your own machine: nothing bills it, so it has no budget.</source>
            <translation>{name} 是你自己的机器：它不产生费用，因此没有预算。</translation>
        </message>
        <message>
            <source>{name} has ended ({state}): it bills nothing any more, so its budget cannot change.</source>
            <translation>{name} 已结束（{state}）：它不再产生任何费用，因此无法修改其预算。</translation>
        </message>
        <message>
            <source>{name} was started to stop it again without charge, but it did not run within {minutes} minutes (it is {state}). It may still bill: stop it in the cloud's console.</source>
            <translation>为了以不收费方式重新停止，{name} 已被启动，但它在 {minutes} 分钟内没有运行起来（当前为{state}）。它可能仍在计费：请在云控制台中停止它。</translation>
        </message>
        <message>
            <source>The budget of {name} is already spent: its end would come in under a minute, so gpudesk did not ask Alibaba Cloud for a group that would have to end at once.</source>
            <translation>{name} 的预算已经用完：它的结束时间不到一分钟之后，因此 gpudesk 没有向阿里云申请一个必须立刻结束的伸缩组。</translation>
        </message>
        <message>
            <source>The keys are valid but the RAM user may not {action}. Ask the account owner to grant {permission} (for example the AliyunESSFullAccess policy): a machine that recovers by itself is kept by an Auto Scaling (ESS) group.</source>
            <translation>密钥有效，但该 RAM 用户无权{action}。请账号所有者授予 {permission}（例如 AliyunESSFullAccess 策略）：能自行恢复的机器由弹性伸缩（ESS）伸缩组维持。</translation>
        </message>
        <message>
            <source>Auto Scaling (ESS) may not act in this Alibaba Cloud account yet ({detail}). Open the Auto Scaling console once and let it create its service-linked role (AliyunServiceRoleForAutoScaling), then try again.</source>
            <translation>弹性伸缩（ESS）尚不能在此阿里云账号中操作（{detail}）。请先打开一次弹性伸缩控制台，让它创建服务关联角色（AliyunServiceRoleForAutoScaling），然后重试。</translation>
        </message>
        <message>
            <source>The first-boot script is {size} bytes; {provider} takes at most {limit} for a scaling configuration.</source>
            <translation>首次启动脚本有 {size} 字节；{provider} 的伸缩配置最多接受 {limit} 字节。</translation>
        </message>
        <message>
            <source>{provider} accepted new first-boot data for the group {group} but does not hold it: its next machine would start without it.</source>
            <translation>{provider} 接受了伸缩组 {group} 的新首次启动数据，却没有保存它：该组的下一台机器将不带它启动。</translation>
        </message>
        <message>
            <source>Alibaba Cloud no longer has the scaling group {name} in {region}.</source>
            <translation>阿里云在 {region} 中已没有伸缩组 {name}。</translation>
        </message>
        <message>
            <source>The budget of this run is already spent: its end ({at}) is not at least a minute ahead. Nothing was created on {provider}.</source>
            <translation>此次运行的预算已经用完：其结束时间（{at}）距现在不足一分钟。未在 {provider} 上创建任何资源。</translation>
        </message>
        <message>
            <source>The group {group} cannot be set to end at {at}: that is not at least a minute ahead. End the group now instead.</source>
            <translation>无法将伸缩组 {group} 的结束时间设为 {at}：距现在不足一分钟。请立即结束该伸缩组。</translation>
        </message>
        <message>
            <source>The first-boot script is {size} bytes; {provider} takes at most {limit} for a launch template.</source>
            <translation>首次启动脚本有 {size} 字节；{provider} 的启动模板最多接受 {limit} 字节。</translation>
        </message>
        <message>
            <source>{provider} accepted the group {group} but does not list it; look for it in the console before launching again.</source>
            <translation>{provider} 已接受伸缩组 {group}，但查询不到它；再次启动前请先在控制台中查找它。</translation>
        </message>
        <message>
            <source>The budget of {name} is already spent: {provider} would end the group before its first machine started, so none was made.</source>
            <translation>{name} 的预算已经用完：{provider} 会在第一台机器启动前就结束这个伸缩组，因此没有创建任何资源。</translation>
        </message>
        <message>
            <source>The first-boot script is {size} bytes once encoded; {provider} Auto Scaling takes at most {limit}.</source>
            <translation>首次启动脚本编码后有 {size} 字节；{provider} 弹性伸缩最多只接受 {limit} 字节。</translation>
        </message>
        <message>
            <source>{provider} has no subnet of the default VPC in {where} for an Auto Scaling group; make one in the VPC console (or pick another zone) and try again.</source>
            <translation>{provider} 在 {where} 没有默认私有网络（VPC）的子网可供弹性伸缩组使用；请在私有网络控制台创建一个子网（或换一个可用区）后重试。</translation>
        </message>
        <message>
            <source>{provider} gave gpudesk no role for this machine ({why}), and without one a stop at the budget cannot end the bill with gpudesk closed: a stop from inside the machine keeps charging there. Nothing was launched. Choose terminate at the budget (the cloud's own timer then ends the machine), or accept that only the open app stops it (--app-stop-only, or the Launch dialog's box).</source>
            <translation>{provider}没有为这台机器给 gpudesk 角色（{why}）。没有角色，关闭 gpudesk 时到达预算的停止无法结束计费：在该云上从机器内部关机会继续计费。没有启动任何机器。请选择到达预算时释放（云自己的定时器会结束这台机器），或接受只有打开的应用才能停止它（--app-stop-only，或启动对话框中的选项）。</translation>
        </message>
        <message>
            <source>Alibaba Cloud has no public Ubuntu image for {instance_type} in {region}, with a GPU driver or to install one on. Choose one of the region's images with --image (the Launch dialog's Image field) and install a GPU driver on it, or launch in another region. Its images: {images}</source>
            <translation>阿里云在 {region} 没有适用于 {instance_type} 的公共 Ubuntu 镜像（无论是否带 GPU 驱动，可在其上安装驱动的也没有）。请用 --image（或“启动”对话框的“镜像”字段）选择该地域的一个镜像并在其上安装 GPU 驱动，或改在其他地域启动。该地域的镜像：{images}</translation>
        </message>
    </context>
    <context>
        <name>RunControl</name>
        <message>
            <source>Choose a machine to run on.</source>
            <translation>请选择运行所用的机器。</translation>
        </message>
        <message>
            <source>The project folder {project} does not exist.</source>
            <translation>项目文件夹 {project} 不存在。</translation>
        </message>
        <message>
            <source>Name the training script (e.g. train.py).</source>
            <translation>请填写训练脚本（例如 train.py）。</translation>
        </message>
        <message>
            <source>The arguments cannot be read: {error}.</source>
            <translation>无法解析参数：{error}。</translation>
        </message>
        <message>
            <source>{service} is not installed for {python} on the machine. Add it to the project's requirements, or install it there: {python} -m pip install {package}</source>
            <translation>机器上的 {python} 没有安装 {service}。请把它加入项目的依赖，或在机器上安装：{python} -m pip install {package}</translation>
        </message>
        <message>
            <source>{service} did not start on the machine within {seconds} s. Its last output: {detail}</source>
            <translation>{service} 未能在 {seconds} 秒内在机器上启动。最后的输出：{detail}</translation>
        </message>
        <message>
            <source>This machine's key is kept in the keyring, which ssh in a terminal cannot read. Give the key to your ssh-agent (gpudesk ssh-config --agent) or choose a key file.</source>
            <translation>这台机器的密钥保存在系统密钥环中，终端里的 ssh 无法读取。请把密钥交给 ssh-agent（gpudesk ssh-config --agent），或选择一个密钥文件。</translation>
        </message>
        <message>
            <source>GPUs per machine is {nproc}, but {target} has {gpus} GPU(s). Lower GPUs per machine to {gpus}, or choose a machine with more GPUs.</source>
            <translation>每台机器 GPU 数设为 {nproc}，但 {target} 只有 {gpus} 块 GPU。请把每台机器 GPU 数降到 {gpus}，或选择 GPU 更多的机器。</translation>
        </message>
        <message>
            <source>{problem} A GPU run cannot start on {target}. Fix the driver there, or set GPUs per machine to 0 for a CPU run.</source>
            <translation>{problem} 无法在 {target} 上启动 GPU 运行。请修复那里的驱动，或把每台机器 GPU 数设为 0 以进行 CPU 运行。</translation>
        </message>
        <message>
            <source>preflight (error): {message}</source>
            <translation>预检（错误）：{message}</translation>
        </message>
        <message>
            <source>preflight (warning): {message}</source>
            <translation>预检（警告）：{message}</translation>
        </message>
        <message>
            <source>preflight: a CPU run (GPUs per machine is 0): the GPUs and the NVIDIA driver of {target} are not used</source>
            <translation>预检：CPU 运行（每台机器 GPU 数为 0）：不会使用 {target} 的 GPU 和 NVIDIA 驱动</translation>
        </message>
        <message>
            <source>preflight on {target}: {python} can run the script</source>
            <translation>{target} 预检通过：{python} 可以运行该脚本</translation>
        </message>
        <message>
            <source>preflight on {target}: {python} can run the script, {free:.0f} GiB free</source>
            <translation>{target} 预检通过：{python} 可以运行该脚本，可用空间 {free:.0f} GiB</translation>
        </message>
        <message>
            <source>{python} on {target} lacks what requirements.txt lists: {missing}. Install them there ({python} -m pip install -r requirements.txt), or make a venv with `gpudesk bootstrap --on TARGET --project DIR` and set Python to its python.</source>
            <translation>{target} 上的 {python} 缺少 requirements.txt 列出的包：{missing}。请在那里安装（{python} -m pip install -r requirements.txt），或用 `gpudesk bootstrap --on TARGET --project DIR` 创建虚拟环境，并把 Python 设为其中的 python。</translation>
        </message>
        <message>
            <source>Exit status 0, but this GPU run started on a machine whose NVIDIA driver did not work (see the preflight lines above): it may have trained on no GPU.</source>
            <translation>退出状态为 0，但这次 GPU 运行启动时机器的 NVIDIA 驱动无法工作（见上方的预检行）：它可能根本没有在 GPU 上训练。</translation>
        </message>
        <message>
            <source>Only {free:.1f} GiB are free on {target} ({folder}): the project, the log and the checkpoints may not fit. Free some space there or choose a bigger disk.</source>
            <translation>{target}（{folder}）上只剩 {free:.1f} GiB 可用空间：项目、日志和检查点可能放不下。请在那里清理空间，或选择更大的磁盘。</translation>
        </message>
        <message>
            <source>Exit status 0, but {n} of {total} rank(s) said they found no GPU: "{line}". The script may have done nothing; check that the machine has {total} GPU(s).</source>
            <translation>退出状态为 0，但 {total} 个 rank 中有 {n} 个报告找不到 GPU："{line}"。脚本可能什么都没做；请确认机器有 {total} 块 GPU。</translation>
        </message>
        <message>
            <source>Exit status 0, but this CPU run's script said it found no GPU: "{line}". It may have done nothing: make it fall back to the CPU, or run it on a GPU machine.</source>
            <translation>退出状态为 0，但这次 CPU 运行的脚本报告找不到 GPU：“{line}”。它可能什么也没做：请让脚本回退到 CPU，或在 GPU 机器上运行。</translation>
        </message>
        <message>
            <source>Exit status 0 after only {seconds:.0f} s, and the log shows no training step (no step, epoch, batch or loss line): the script may have done nothing. Read its log.</source>
            <translation>仅 {seconds:.0f} 秒后就以退出状态 0 结束，且日志中没有任何训练步骤（没有 step、epoch、batch 或 loss 行）：脚本可能什么都没做。请查看它的日志。</translation>
        </message>
    </context>
    <context>
        <name>RunMachines</name>
        <message>
            <source>Machines of this run</source>
            <translation>这次运行的机器</translation>
        </message>
        <message>
            <source>Refresh</source>
            <translation>刷新</translation>
        </message>
        <message>
            <source>Machine</source>
            <translation>机器</translation>
        </message>
        <message>
            <source>From</source>
            <translation>开始</translation>
        </message>
        <message>
            <source>To</source>
            <translation>结束</translation>
        </message>
        <message>
            <source>How it ended</source>
            <translation>如何结束</translation>
        </message>
        <message>
            <source>Resumed from</source>
            <translation>恢复自</translation>
        </message>
        <message>
            <source>Cost</source>
            <translation>费用</translation>
        </message>
        <message>
            <source>Reading the run's machines…</source>
            <translation>正在读取这次运行的机器…</translation>
        </message>
        <message>
            <source>reclaimed</source>
            <translation>被回收</translation>
        </message>
        <message>
            <source>group ended</source>
            <translation>伸缩组已结束</translation>
        </message>
        <message>
            <source>budget reached</source>
            <translation>达到预算</translation>
        </message>
        <message>
            <source>lost</source>
            <translation>失联</translation>
        </message>
        <message>
            <source>moved to the next machine</source>
            <translation>已转到下一台机器</translation>
        </message>
        <message>
            <source>running</source>
            <translation>运行中</translation>
        </message>
        <message>
            <source>not counted</source>
            <translation>未计</translation>
        </message>
        <message>
            <source>step {step}</source>
            <translation>第 {step} 步</translation>
        </message>
        <message>
            <source>The bucket could not be read ({why}): only what this computer saw is shown, without costs.</source>
            <translation>无法读取存储桶（{why}）：只显示这台电脑看到的情况，没有费用。</translation>
        </message>
        <message>
            <source>{n} machine(s) so far; {spent} {currency} in all.</source>
            <translation>目前共 {n} 台机器；合计 {spent} {currency}。</translation>
        </message>
        <message>
            <source>{n} machine(s) so far; no agent has counted the cost in the bucket yet.</source>
            <translation>目前共 {n} 台机器；还没有代理在存储桶里记下费用。</translation>
        </message>
    </context>
    <context>
        <name>RunOutputs</name>
        <message>
            <source>Nothing was deleted: {why}</source>
            <translation>没有删除任何内容：{why}</translation>
        </message>
        <message>
            <source>Outputs in the bucket</source>
            <translation>存储桶中的输出</translation>
        </message>
        <message>
            <source>Name</source>
            <translation>名称</translation>
        </message>
        <message>
            <source>Size</source>
            <translation>大小</translation>
        </message>
        <message>
            <source>State</source>
            <translation>状态</translation>
        </message>
        <message>
            <source>Refresh</source>
            <translation>刷新</translation>
        </message>
        <message>
            <source>Download outputs…</source>
            <translation>下载输出…</translation>
        </message>
        <message>
            <source>Delete from bucket…</source>
            <translation>从存储桶删除…</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>Open folder</source>
            <translation>打开文件夹</translation>
        </message>
        <message>
            <source>The bucket could not be read: {why}</source>
            <translation>无法读取存储桶：{why}</translation>
        </message>
        <message>
            <source>Choose a run to see what its bucket holds.</source>
            <translation>选择一次运行以查看其存储桶中的内容。</translation>
        </message>
        <message>
            <source>Run {run} has no bucket: its checkpoints are on the machine and copied to this laptop only.</source>
            <translation>运行 {run} 没有存储桶：其检查点保存在机器上，并且只复制到这台电脑。</translation>
        </message>
        <message>
            <source>{uri} ({region}): {size} in all. {cost}</source>
            <translation>{uri}（{region}）：共 {size}。{cost}</translation>
        </message>
        <message>
            <source>Storage: no published price known for {cloud} in {region}, so no cost is shown.</source>
            <translation>存储：不知道 {cloud} 在 {region} 的公开价格，因此不显示费用。</translation>
        </message>
        <message>
            <source>Storage: about {cost} {currency} a month ({source}, {date}).</source>
            <translation>存储：每月约 {cost} {currency}（{source}，{date}）。</translation>
        </message>
        <message>
            <source>Checkpoints ({n})</source>
            <translation>检查点（{n}）</translation>
        </message>
        <message>
            <source>complete, latest</source>
            <translation>完整，最新</translation>
        </message>
        <message>
            <source>complete</source>
            <translation>完整</translation>
        </message>
        <message>
            <source>incomplete (upload cut off; never resumed from)</source>
            <translation>不完整（上传中断；不会从它恢复）</translation>
        </message>
        <message>
            <source>Outputs ({n})</source>
            <translation>输出（{n}）</translation>
        </message>
        <message>
            <source>Log parts ({n})</source>
            <translation>日志分段（{n}）</translation>
        </message>
        <message>
            <source>Download the outputs into</source>
            <translation>将输出下载到</translation>
        </message>
        <message>
            <source>Data out to this computer is billed by the cloud; gpudesk knows no published price for {cloud} in {region}, so none is shown.</source>
            <translation>下载到这台电脑的出流量由云厂商计费；gpudesk 不知道 {cloud} 在 {region} 的公开价格，因此不显示。</translation>
        </message>
        <message>
            <source>Data out to this computer: about {cost} {currency} ({source}, {date}).</source>
            <translation>下载到这台电脑的出流量：约 {cost} {currency}（{source}，{date}）。</translation>
        </message>
        <message>
            <source>Download {n} file(s), {size}, from {uri} into {folder}?</source>
            <translation>从 {uri} 下载 {n} 个文件（{size}）到 {folder}？</translation>
        </message>
        <message>
            <source>Download the outputs?</source>
            <translation>下载输出？</translation>
        </message>
        <message>
            <source>Download</source>
            <translation>下载</translation>
        </message>
        <message>
            <source>starting…</source>
            <translation>正在开始…</translation>
        </message>
        <message>
            <source>Downloading {size} into {folder}…</source>
            <translation>正在下载 {size} 到 {folder}…</translation>
        </message>
        <message>
            <source>{percent} % · {done} of {total}</source>
            <translation>{percent} % · {done} / {total}</translation>
        </message>
        <message>
            <source>Cancelling after the current piece…</source>
            <translation>当前数据块完成后取消…</translation>
        </message>
        <message>
            <source>Run {run}: {n} file(s), {size}, are in {folder}.</source>
            <translation>运行 {run}：{n} 个文件（{size}）已在 {folder}。</translation>
        </message>
        <message>
            <source>Download cancelled. Files that were complete stay in {folder}; the file being fetched was removed.</source>
            <translation>下载已取消。已完整下载的文件保留在 {folder}；正在下载的文件已删除。</translation>
        </message>
        <message>
            <source>The download stopped: {why}</source>
            <translation>下载已停止：{why}</translation>
        </message>
        <message>
            <source>stopped</source>
            <translation>已停止</translation>
        </message>
        <message>
            <source>Delete everything of run {run} in {uri}: {checkpoints} checkpoint(s), {outputs} output file(s) and {logs} log part(s), {size} in all? This cannot be undone: the bucket keeps no copy, and a resume from the bucket is no longer possible.</source>
            <translation>删除运行 {run} 在 {uri} 中的全部内容：{checkpoints} 个检查点、{outputs} 个输出文件和 {logs} 个日志分段，共 {size}？此操作无法撤销：存储桶不保留副本，之后也无法再从存储桶恢复。</translation>
        </message>
        <message>
            <source>Delete from the bucket?</source>
            <translation>从存储桶删除？</translation>
        </message>
        <message>
            <source>Delete</source>
            <translation>删除</translation>
        </message>
        <message>
            <source>Deleting…</source>
            <translation>正在删除…</translation>
        </message>
        <message>
            <source>Deleted {n} object(s) of run {run} from {uri}.</source>
            <translation>已从 {uri} 删除运行 {run} 的 {n} 个对象。</translation>
        </message>
    </context>
    <context>
        <name>RunPage</name>
        <message>
            <source>New run</source>
            <translation>新建运行</translation>
        </message>
        <message>
            <source>Run</source>
            <translation>运行</translation>
        </message>
        <message>
            <source>Machine:</source>
            <translation>机器：</translation>
        </message>
        <message>
            <source>Key file:</source>
            <translation>密钥文件：</translation>
        </message>
        <message>
            <source>Project folder:</source>
            <translation>项目文件夹：</translation>
        </message>
        <message>
            <source>Script:</source>
            <translation>脚本：</translation>
        </message>
        <message>
            <source>Arguments:</source>
            <translation>参数：</translation>
        </message>
        <message>
            <source>GPUs per machine:</source>
            <translation>每台机器的 GPU 数：</translation>
        </message>
        <message>
            <source>More machines:</source>
            <translation>更多机器：</translation>
        </message>
        <message>
            <source>Mixed precision:</source>
            <translation>混合精度：</translation>
        </message>
        <message>
            <source>Checkpoint every:</source>
            <translation>检查点间隔：</translation>
        </message>
        <message>
            <source>Python:</source>
            <translation>Python：</translation>
        </message>
        <message>
            <source>Bucket:</source>
            <translation>存储桶：</translation>
        </message>
        <message>
            <source>Data:</source>
            <translation>数据：</translation>
        </message>
        <message>
            <source>a machine, or ssh://user@host:port</source>
            <translation>选择机器，或输入 ssh://用户@主机:端口</translation>
        </message>
        <message>
            <source>0 (CPU run)</source>
            <translation>0（CPU 运行）</translation>
        </message>
        <message>
            <source>One process per GPU; 0 runs on the CPU (no GPU is used, and the run is labelled CPU)</source>
            <translation>每块 GPU 一个进程；0 表示在 CPU 上运行（不使用 GPU，运行标记为 CPU）</translation>
        </message>
        <message>
            <source>the machine's; or this run's: s3://bucket/prefix</source>
            <translation>使用机器的；或为本次运行指定：s3://bucket/prefix</translation>
        </message>
        <message>
            <source>Where this run keeps its checkpoints, logs and outputs, with short-lived keys limited to its folder. Checked before the run starts.</source>
            <translation>本次运行保存检查点、日志和输出的位置，使用仅限于其文件夹的短期密钥。运行开始前会先检查。</translation>
        </message>
        <message>
            <source>none; or a dataset: NAME or NAME:/path/on/machine</source>
            <translation>无；或数据集：名称 或 名称:/机器上的路径</translation>
        </message>
        <message>
            <source>Add to queue</source>
            <translation>加入队列</translation>
        </message>
        <message>
            <source>Queue the run on the machine instead of starting it: the machine's agent starts it when the runs before it have started and the GPUs it asks for are free.</source>
            <translation>将运行加入机器的队列而不是立即启动：当排在它前面的运行都已启动且它所需的 GPU 空闲时，机器上的代理会启动它。</translation>
        </message>
        <message>
            <source>only for ssh:// and your own machines</source>
            <translation>仅用于 ssh:// 和自有机器</translation>
        </message>
        <message>
            <source>for multi-node: other machines, comma-separated</source>
            <translation>多节点：其他机器，用逗号分隔</translation>
        </message>
        <message>
            <source>e.g. --epochs 10 --lr 3e-4</source>
            <translation>例如 --epochs 10 --lr 3e-4</translation>
        </message>
        <message>
            <source>A dataset pushed with 'gpudesk data push' (the Data page): the machine fetches it from its bucket before the script starts (GPUDESK_DATA_DIR), once per machine. Or a public source the machine downloads itself: https://host/file, s3://bucket/prefix (also cos://, oss://), or hf:ORG/NAME for a Hugging Face dataset (with the token saved on the Data page). Add :/path/on/machine for where it appears.</source>
            <translation>用 `gpudesk data push`（或“数据”页）推送的数据集：脚本启动前，机器从其存储桶获取它（GPUDESK_DATA_DIR），每台机器一次。也可以是机器自己下载的公开来源：https://主机/文件、s3://存储桶/前缀（也可 cos://、oss://），或 Hugging Face 数据集 hf:组织/名称（令牌在“数据”页保存）。加上 :/机器上的路径 指定它出现的位置。</translation>
        </message>
        <message>
            <source>Browse…</source>
            <translation>浏览…</translation>
        </message>
        <message>
            <source>as the script chooses</source>
            <translation>由脚本决定</translation>
        </message>
        <message>
            <source>fp16 (with GradScaler)</source>
            <translation>fp16（带 GradScaler）</translation>
        </message>
        <message>
            <source>bf16</source>
            <translation>bf16</translation>
        </message>
        <message>
            <source>off (fp32)</source>
            <translation>关闭（fp32）</translation>
        </message>
        <message>
            <source> min</source>
            <translation> 分钟</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>Stop the sync of a run that is starting; nothing is started on the machine.</source>
            <translation>停止正在启动的运行的同步；机器上不会启动任何东西。</translation>
        </message>
        <message>
            <source>Stop…</source>
            <translation>停止…</translation>
        </message>
        <message>
            <source>Resume</source>
            <translation>继续</translation>
        </message>
        <message>
            <source>Recover on a new machine…</source>
            <translation>在新机器上恢复…</translation>
        </message>
        <message>
            <source>The machine is gone (a spot interruption): launch one like it and resume from the checkpoints copied to this computer</source>
            <translation>机器已不在（竞价实例被回收）：启动一台同样的机器，并从已复制到本机的检查点继续</translation>
        </message>
        <message>
            <source>TensorBoard</source>
            <translation>TensorBoard</translation>
        </message>
        <message>
            <source>Jupyter</source>
            <translation>Jupyter</translation>
        </message>
        <message>
            <source>Open terminal</source>
            <translation>打开终端</translation>
        </message>
        <message>
            <source>Search the log</source>
            <translation>搜索日志</translation>
        </message>
        <message>
            <source>Previous</source>
            <translation>上一个</translation>
        </message>
        <message>
            <source>Next</source>
            <translation>下一个</translation>
        </message>
        <message>
            <source>Hide the teardown's lines</source>
            <translation>隐藏退出清理时的输出</translation>
        </message>
        <message>
            <source>Show the teardown's lines ({n} lines)</source>
            <translation>显示退出清理时的输出（{n} 行）</translation>
        </message>
        <message>
            <source>Hide the earlier stop's traceback</source>
            <translation>隐藏之前那次停止的回溯信息</translation>
        </message>
        <message>
            <source>Show the earlier stop's traceback ({n} lines)</source>
            <translation>显示之前那次停止的回溯信息（{n} 行）</translation>
        </message>
        <message>
            <source>Hide the stop's traceback</source>
            <translation>隐藏停止时的回溯信息</translation>
        </message>
        <message>
            <source>Show the stop's traceback ({n} lines)</source>
            <translation>显示停止时的回溯信息（{n} 行）</translation>
        </message>
        <message>
            <source>The run goes on when you close gpudesk or the connection drops; choose it here to see its log.</source>
            <translation>关闭 gpudesk 或连接断开时，运行会继续；在这里选择它即可查看日志。</translation>
        </message>
        <message>
            <source>from the machine: {key}</source>
            <translation>来自机器配置：{key}</translation>
        </message>
        <message>
            <source>from the machine: the ssh-agent</source>
            <translation>来自机器配置：ssh-agent</translation>
        </message>
        <message>
            <source>from the machine: the key in the keyring</source>
            <translation>来自机器配置：钥匙串中的密钥</translation>
        </message>
        <message>
            <source>Stop the run (asks first)</source>
            <translation>停止运行（会先确认）</translation>
        </message>
        <message>
            <source>Enabled while the chosen run is running</source>
            <translation>所选运行正在进行时可用</translation>
        </message>
        <message>
            <source>no run chosen</source>
            <translation>未选择运行</translation>
        </message>
        <message>
            <source>finished</source>
            <translation>已完成</translation>
        </message>
        <message>
            <source>failed</source>
            <translation>失败</translation>
        </message>
        <message>
            <source>stopped</source>
            <translation>已停止</translation>
        </message>
        <message>
            <source>lost</source>
            <translation>已丢失</translation>
        </message>
        <message>
            <source>not found</source>
            <translation>未找到</translation>
        </message>
        <message>
            <source>queued</source>
            <translation>排队中</translation>
        </message>
        <message>
            <source>cancelled</source>
            <translation>已取消</translation>
        </message>
        <message>
            <source>did it train?</source>
            <translation>真的训练了吗？</translation>
        </message>
        <message>
            <source>starting…</source>
            <translation>启动中…</translation>
        </message>
        <message>
            <source>not started</source>
            <translation>未启动</translation>
        </message>
        <message>
            <source>following…</source>
            <translation>正在跟踪…</translation>
        </message>
        <message>
            <source>not followed</source>
            <translation>未跟踪</translation>
        </message>
        <message>
            <source>stopped on request</source>
            <translation>已按请求停止</translation>
        </message>
        <message>
            <source>queued: it starts when the machine's queue comes to it</source>
            <translation>排队中：轮到它时，机器上的队列会启动它</translation>
        </message>
        <message>
            <source>cancelled in the queue before it started</source>
            <translation>在队列中启动前已取消</translation>
        </message>
        <message>
            <source>running</source>
            <translation>运行中</translation>
        </message>
        <message>
            <source>exit status 0, but did it train? (see below)</source>
            <translation>退出状态 0，但真的训练了吗？（见下方）</translation>
        </message>
        <message>
            <source>finished (exit status {code})</source>
            <translation>已完成（退出状态 {code}）</translation>
        </message>
        <message>
            <source>failed (exit status {code})</source>
            <translation>失败（退出状态 {code}）</translation>
        </message>
        <message>
            <source>lost: its processes are gone; Resume carries on from the newest checkpoint</source>
            <translation>已丢失：进程已不在；“继续”会从最新的检查点接着训练</translation>
        </message>
        <message>
            <source>not found on the machine</source>
            <translation>在机器上未找到</translation>
        </message>
        <message>
            <source>Project folder</source>
            <translation>项目文件夹</translation>
        </message>
        <message>
            <source>SSH key file</source>
            <translation>SSH 密钥文件</translation>
        </message>
        <message>
            <source>starting {script} on {machine}, {device}</source>
            <translation>正在 {machine} 上启动 {script}，{device}</translation>
        </message>
        <message>
            <source>The run did not start</source>
            <translation>运行未能启动</translation>
        </message>
        <message>
            <source>No Python on {target} ('{python}' was not found). Install it (on Ubuntu: sudo apt install python3 python3-venv), or enter the right one in the Python field of this form.</source>
            <translation>{target} 上没有 Python（找不到“{python}”）。请安装（Ubuntu：sudo apt install python3 python3-venv），或在本表单的 Python 栏中填入正确的解释器。</translation>
        </message>
        <message>
            <source>the run did not start: {why}</source>
            <translation>运行未启动：{why}</translation>
        </message>
        <message>
            <source>Cancelling: the sync stops after the file it is copying…</source>
            <translation>正在取消：同步会在当前文件复制完后停止…</translation>
        </message>
        <message>
            <source>Cancelled before the run started; nothing was started on the machine. Files already copied are complete.</source>
            <translation>已在运行启动前取消；机器上没有启动任何东西。已复制的文件都是完整的。</translation>
        </message>
        <message>
            <source>Run {run} started.</source>
            <translation>运行 {run} 已启动。</translation>
        </message>
        <message>
            <source>run {run}: {script} on {machine}, {device}</source>
            <translation>运行 {run}：{script}，在 {machine} 上，{device}</translation>
        </message>
        <message>
            <source>Stopped following: {why}</source>
            <translation>已停止跟踪：{why}</translation>
        </message>
        <message>
            <source>Run {run} stopped on request.</source>
            <translation>运行 {run} 已按请求停止。</translation>
        </message>
        <message>
            <source>torchrun's traceback of the stop signal is folded ({n} lines).</source>
            <translation>torchrun 对停止信号的回溯信息已折叠（{n} 行）。</translation>
        </message>
        <message>
            <source>Run {run} finished: every process wrote its final checkpoint and said so; the exit status {code} came from a process's teardown after that, not from training.</source>
            <translation>运行 {run} 已完成：每个进程都写好了最终检查点并已报告；退出状态 {code} 来自之后某个进程的退出清理，而不是训练本身。</translation>
        </message>
        <message>
            <source>Those lines are folded ({n} lines).</source>
            <translation>这些输出已折叠（{n} 行）。</translation>
        </message>
        <message>
            <source>Stop the run?</source>
            <translation>停止运行？</translation>
        </message>
        <message>
            <source>Stop run {run}? Training ends now; what was not checkpointed is lost. Resume carries on from the newest checkpoint.</source>
            <translation>停止运行 {run}？训练会立即结束，未保存到检查点的进度将丢失。“继续”会从最新的检查点接着训练。</translation>
        </message>
        <message>
            <source>Stop run</source>
            <translation>停止运行</translation>
        </message>
        <message>
            <source>Stopping run {run}…</source>
            <translation>正在停止运行 {run}…</translation>
        </message>
        <message>
            <source>The run was not stopped</source>
            <translation>运行未被停止</translation>
        </message>
        <message>
            <source>Run {run} was asked to stop.</source>
            <translation>已请求运行 {run} 停止。</translation>
        </message>
        <message>
            <source>Resuming run {run}…</source>
            <translation>正在继续运行 {run}…</translation>
        </message>
        <message>
            <source>The run did not resume</source>
            <translation>运行未能继续</translation>
        </message>
        <message>
            <source>Connecting, checking the machine (driver, CUDA, Python, torch, disk), syncing the project and starting the run…</source>
            <translation>正在连接、检查机器（驱动、CUDA、Python、torch、磁盘）、同步项目并启动运行…</translation>
        </message>
        <message>
            <source>free (your own machine)</source>
            <translation>免费（你自己的机器）</translation>
        </message>
        <message>
            <source>billed by the cloud as data out (gpudesk has no price for it)</source>
            <translation>由云按出网流量计费（gpudesk 没有其价格）</translation>
        </message>
        <message>
            <source>about {cost} of data out</source>
            <translation>约 {cost} 的出网流量费</translation>
        </message>
        <message>
            <source>Keeping copies of the last {n} checkpoint(s) here; this copy moves {size}: {cost}.</source>
            <translation>在本机保留最近 {n} 个检查点的副本；这次复制传输 {size}：{cost}。</translation>
        </message>
        <message>
            <source>{n} checkpoint(s) do not fit the size cap and stay only on the machine.</source>
            <translation>{n} 个检查点超出大小上限，只保留在机器上。</translation>
        </message>
        <message>
            <source>Run {run} failed (exit status {code}). Its last lines:
{lines}</source>
            <translation>运行 {run} 失败（退出状态 {code}）。最后几行：
{lines}</translation>
        </message>
        <message>
            <source>Checking the machine, syncing the project and adding the run to its queue…</source>
            <translation>正在检查机器、同步项目并将运行加入其队列…</translation>
        </message>
        <message>
            <source>The run was not queued</source>
            <translation>运行未加入队列</translation>
        </message>
        <message>
            <source>Run {run} is in the queue of {machine}.</source>
            <translation>运行 {run} 已在 {machine} 的队列中。</translation>
        </message>
        <message>
            <source>Run {run} was cancelled on {machine}: it was stopped.</source>
            <translation>{machine} 上的运行 {run} 已取消：它已被停止。</translation>
        </message>
        <message>
            <source>Run {run} left the queue of {machine} and is running.</source>
            <translation>运行 {run} 已离开 {machine} 的队列，正在运行。</translation>
        </message>
        <message>
            <source>Run {run} from the queue of {machine} succeeded.</source>
            <translation>{machine} 队列中的运行 {run} 已成功。</translation>
        </message>
        <message>
            <source>Run {run} from the queue of {machine} failed.</source>
            <translation>{machine} 队列中的运行 {run} 已失败。</translation>
        </message>
        <message>
            <source>Run {run} on {machine}: {state}.</source>
            <translation>{machine} 上的运行 {run}：{state}。</translation>
        </message>
        <message>
            <source>Run {run} was cancelled: it was taken out of the queue of {machine} and never started.</source>
            <translation>运行 {run} 已取消：它已移出 {machine} 的队列，从未启动。</translation>
        </message>
        <message>
            <source>Looking for run {run}'s checkpoints…</source>
            <translation>正在查找运行 {run} 的检查点…</translation>
        </message>
        <message>
            <source>Run {run} is still running.</source>
            <translation>运行 {run} 仍在进行中。</translation>
        </message>
        <message>
            <source>Resuming run {run} from {checkpoint}…</source>
            <translation>正在从 {checkpoint} 继续运行 {run}…</translation>
        </message>
        <message>
            <source>No checkpoint</source>
            <translation>没有检查点</translation>
        </message>
        <message>
            <source>Run {run} has no checkpoint on the machine, so Resume starts it over from step 0 (the script did not save one through gpudesk.training, or it stopped before the first). Start it over?</source>
            <translation>运行 {run} 在机器上没有检查点，因此“继续”会从第 0 步重新开始（脚本没有通过 gpudesk.training 保存检查点，或在第一个检查点之前就停止了）。要重新开始吗？</translation>
        </message>
        <message>
            <source>Start over</source>
            <translation>重新开始</translation>
        </message>
        <message>
            <source>Not resumed.</source>
            <translation>未继续。</translation>
        </message>
        <message>
            <source>Run {run} resumed (attempt {n}).</source>
            <translation>运行 {run} 已继续（第 {n} 次尝试）。</translation>
        </message>
        <message>
            <source>from {checkpoint}</source>
            <translation>从 {checkpoint}</translation>
        </message>
        <message>
            <source>from the beginning (no checkpoint was copied)</source>
            <translation>从头开始（没有复制到检查点）</translation>
        </message>
        <message>
            <source>Recover the run?</source>
            <translation>恢复运行？</translation>
        </message>
        <message>
            <source>Launch a new machine like {machine} (it bills from now on) and resume run {run} there {where}?</source>
            <translation>启动一台与 {machine} 相同的新机器（从现在开始计费），并在其上{where}继续运行 {run}？</translation>
        </message>
        <message>
            <source>Launch and resume</source>
            <translation>启动并继续</translation>
        </message>
        <message>
            <source>Launching a new machine for run {run}…</source>
            <translation>正在为运行 {run} 启动新机器…</translation>
        </message>
        <message>
            <source>The run was not recovered</source>
            <translation>运行未能恢复</translation>
        </message>
        <message>
            <source>Starting {service} on the machine…</source>
            <translation>正在机器上启动 {service}…</translation>
        </message>
        <message>
            <source>{service} did not open</source>
            <translation>{service} 未能打开</translation>
        </message>
        <message>
            <source>{service} is open at 127.0.0.1:{port} (through SSH; nothing else is exposed).</source>
            <translation>{service} 已在 127.0.0.1:{port} 打开（经由 SSH，不对外开放其他端口）。</translation>
        </message>
        <message>
            <source>No terminal</source>
            <translation>无法打开终端</translation>
        </message>
        <message>
            <source>No terminal program was found; the ssh command is on the clipboard.</source>
            <translation>未找到终端程序；ssh 命令已复制到剪贴板。</translation>
        </message>
        <message>
            <source>Opened a terminal on {host}.</source>
            <translation>已打开连接 {host} 的终端。</translation>
        </message>
        <message>
            <source>{n} found</source>
            <translation>找到 {n} 处</translation>
        </message>
    </context>
    <context>
        <name>RunQueue</name>
        <message>
            <source>queued run {run} on {target} ({device}); it starts when the GPUs it asks for are free and the runs before it have started</source>
            <translation>已将运行 {run} 加入 {target} 的队列（{device}）；当它所需的 GPU 空闲且排在它前面的运行都已启动后，它才会启动</translation>
        </message>
        <message>
            <source>No gpudesk agent keeps the queue on {target}: queued runs wait until one runs there. Watching the machine starts one (the Watch page, or gpudesk watch --on {target}).</source>
            <translation>{target} 上没有 gpudesk 代理在管理队列：排队的运行会一直等待，直到那里有代理运行。监控这台机器即可启动代理（“监控”页面，或 gpudesk watch --on {target}）。</translation>
        </message>
        <message>
            <source>started the gpudesk agent on {target}: it keeps the queue and starts each run when its turn comes, with gpudesk closed too</source>
            <translation>已在 {target} 上启动 gpudesk 代理：它管理队列，轮到每个运行时启动它，gpudesk 关闭时也是如此</translation>
        </message>
        <message>
            <source>No gpudesk agent keeps the queue on {target}, and none could be started there: {why}. Queued runs wait until one runs there.</source>
            <translation>{target} 上没有 gpudesk 代理在管理队列，也无法在那里启动代理：{why}。排队的运行会一直等待，直到那里有代理运行。</translation>
        </message>
        <message>
            <source>The run queue on {target} failed while {what}: {detail}</source>
            <translation>{target} 上的运行队列在{what}时失败：{detail}</translation>
        </message>
        <message>
            <source>A queue belongs to one machine: a multi-node run cannot be queued.</source>
            <translation>队列只属于一台机器：多节点运行不能排队。</translation>
        </message>
        <message>
            <source>No queued or running run '{run}' in the queue on {target}.</source>
            <translation>{target} 的队列中没有排队中或运行中的运行“{run}”。</translation>
        </message>
    </context>
    <context>
        <name>RunQueueView</name>
        <message>
            <source>Queue on this machine</source>
            <translation>此机器上的队列</translation>
        </message>
        <message>
            <source>Refresh</source>
            <translation>刷新</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>Cancel the chosen run: a queued run never starts, a running one is stopped.</source>
            <translation>取消所选运行：排队中的运行不会再启动，运行中的运行会被停止。</translation>
        </message>
        <message>
            <source>Cancel all</source>
            <translation>全部取消</translation>
        </message>
        <message>
            <source>Cancel every queued and running run of this queue.</source>
            <translation>取消此队列中所有排队中和运行中的运行。</translation>
        </message>
        <message>
            <source>queued</source>
            <translation>排队中</translation>
        </message>
        <message>
            <source>running</source>
            <translation>运行中</translation>
        </message>
        <message>
            <source>succeeded</source>
            <translation>已成功</translation>
        </message>
        <message>
            <source>failed</source>
            <translation>已失败</translation>
        </message>
        <message>
            <source>cancelled</source>
            <translation>已取消</translation>
        </message>
        <message>
            <source>CPU</source>
            <translation>CPU</translation>
        </message>
        <message>
            <source>{n} GPU(s)</source>
            <translation>{n} 个 GPU</translation>
        </message>
        <message>
            <source>GPUs {devices}</source>
            <translation>GPU {devices}</translation>
        </message>
        <message>
            <source>exit status {code}</source>
            <translation>退出状态 {code}</translation>
        </message>
        <message>
            <source>Press Refresh to read the chosen machine's queue.</source>
            <translation>按“刷新”读取所选机器的队列。</translation>
        </message>
        <message>
            <source>{open} queued or running; no agent has counted the machine's GPUs yet.</source>
            <translation>{open} 个排队中或运行中；还没有代理清点这台机器的 GPU。</translation>
        </message>
        <message>
            <source>{open} queued or running; the machine has no GPU: its runs run on the CPU.</source>
            <translation>{open} 个排队中或运行中；这台机器没有 GPU：它的运行在 CPU 上进行。</translation>
        </message>
        <message>
            <source>{open} queued or running; the machine has {gpus} GPU(s).</source>
            <translation>{open} 个排队中或运行中；这台机器有 {gpus} 个 GPU。</translation>
        </message>
        <message>
            <source>Choose a machine to see its queue.</source>
            <translation>请选择一台机器以查看其队列。</translation>
        </message>
        <message>
            <source>Reading the queue of {machine}…</source>
            <translation>正在读取 {machine} 的队列…</translation>
        </message>
        <message>
            <source>The queue could not be read</source>
            <translation>无法读取队列</translation>
        </message>
        <message>
            <source>Cancel a running run?</source>
            <translation>取消正在运行的任务？</translation>
        </message>
        <message>
            <source>Run {run} is training now. Cancelling stops it; what it did since its last checkpoint is lost.</source>
            <translation>运行 {run} 正在训练。取消会停止它；自上个检查点以来的进度会丢失。</translation>
        </message>
        <message>
            <source>Cancel the run</source>
            <translation>取消这次运行</translation>
        </message>
        <message>
            <source>Every queued run is dropped.</source>
            <translation>所有排队中的运行都会被移除。</translation>
        </message>
        <message>
            <source>{n} running run(s) are stopped; what they did since their last checkpoint is lost.</source>
            <translation>{n} 个正在运行的任务会被停止；自上个检查点以来的进度会丢失。</translation>
        </message>
        <message>
            <source>Cancel the whole queue?</source>
            <translation>取消整个队列？</translation>
        </message>
        <message>
            <source>Cancelling…</source>
            <translation>正在取消…</translation>
        </message>
        <message>
            <source>Nothing was cancelled</source>
            <translation>没有取消任何运行</translation>
        </message>
    </context>
    <context>
        <name>Runs</name>
        <message>
            <source>No run '{run}' is recorded on this computer (see {folder}).</source>
            <translation>这台电脑上没有运行 '{run}' 的记录（见 {folder}）。</translation>
        </message>
        <message>
            <source>The script {script} is not in the project folder {project}.</source>
            <translation>脚本 {script} 不在项目文件夹 {project} 中。</translation>
        </message>
        <message>
            <source>The run launcher on {target} failed while {what}: {detail}</source>
            <translation>{target} 上的运行启动器在 {what} 时失败：{detail}</translation>
        </message>
        <message>
            <source>synced {sent} changed files ({unchanged} unchanged) to {target}</source>
            <translation>已同步 {sent} 个有改动的文件到 {target}（{unchanged} 个未改动）</translation>
        </message>
        <message>
            <source>started run {run} on {target} (pid {pid}; {device})</source>
            <translation>已在 {target} 上启动运行 {run}（pid {pid}；{device}）</translation>
        </message>
        <message>
            <source>started node {node} of run {run} on {target} (pid {pid}; {device})</source>
            <translation>已在 {target} 上启动运行 {run} 的节点 {node}（pid {pid}；{device}）</translation>
        </message>
        <message>
            <source>the agent uploads checkpoints, the log and outputs to {uri} (the machine's role {role})</source>
            <translation>代理将检查点、日志和输出上传到 {uri}（使用机器的角色 {role}）</translation>
        </message>
        <message>
            <source>the agent uploads checkpoints, the log and outputs to {uri} with short-lived keys that end at {expires}</source>
            <translation>代理使用在 {expires} 到期的临时密钥，将检查点、日志和输出上传到 {uri}</translation>
        </message>
        <message>
            <source>run {run} has no bucket: its checkpoints stay on the machine and are copied to this computer only ({why})</source>
            <translation>运行 {run} 没有存储桶：其检查点留在机器上，且只复制到这台电脑（{why}）</translation>
        </message>
        <message>
            <source>run {run} starts again without its bucket {uri} ({why}): its checkpoints stay on the machine and are copied to this computer only</source>
            <translation>运行 {run} 重新开始时没有连上它的存储桶 {uri}（{why}）：检查点留在机器上，只复制到这台电脑</translation>
        </message>
        <message>
            <source>{target} has no checkpoint of run {run}: the agent fetches the latest one from {uri} before the script starts</source>
            <translation>{target} 上没有运行 {run} 的检查点：代理会在脚本启动前从 {uri} 取回最新的检查点</translation>
        </message>
        <message>
            <source>CPU</source>
            <translation>CPU</translation>
        </message>
        <message>
            <source>{n} GPU(s) per machine</source>
            <translation>每台机器 {n} 块 GPU</translation>
        </message>
        <message>
            <source>Run {run} on {target} stopped without an exit status: its processes are gone (the machine restarted, or they were killed). Resume it with gpudesk run --resume {run}.</source>
            <translation>{target} 上的运行 {run} 没有留下退出状态就停止了：它的进程已不存在（机器重启了，或进程被杀掉）。用 gpudesk run --resume {run} 继续它。</translation>
        </message>
        <message>
            <source>could not start {program}: {error}</source>
            <translation>无法启动 {program}：{error}</translation>
        </message>
        <message>
            <source>resuming run (attempt {attempt})</source>
            <translation>正在恢复运行（第 {attempt} 次尝试）</translation>
        </message>
        <message>
            <source>new short-lived keys for run {run}'s bucket; they end at {expires}</source>
            <translation>已为运行 {run} 的存储桶换上新的临时密钥，有效期至 {expires}</translation>
        </message>
        <message>
            <source>could not renew run {run}'s bucket keys ({why}); the old ones end at {expires}, then checkpoints are copied to this computer only</source>
            <translation>无法续期运行 {run} 的存储桶密钥（{why}）；旧密钥于 {expires} 失效，之后检查点只复制到这台电脑</translation>
        </message>
        <message>
            <source>the bucket deletes run {run}'s folder on {date} ({days} days after the run ended, Preferences)</source>
            <translation>存储桶将于 {date} 删除运行 {run} 的文件夹（运行结束后 {days} 天，见偏好设置）</translation>
        </message>
        <message>
            <source>the bucket keeps run {run}'s folder until you delete it (Preferences: keep)</source>
            <translation>存储桶会一直保留运行 {run} 的文件夹，直到你删除它（偏好设置：保留）</translation>
        </message>
        <message>
            <source>run {run} starts again, but the deletion date of its bucket folder set when it ended could not be lifted ({why}): change it in the bucket before that date</source>
            <translation>运行 {run} 已重新开始，但无法撤销它上次结束时为存储桶文件夹设置的删除日期（{why}）：请在该日期前到存储桶中修改</translation>
        </message>
        <message>
            <source>could not set when the bucket deletes run {run}'s folder ({why}); it is kept</source>
            <translation>无法设置存储桶删除运行 {run} 文件夹的时间（{why}）；文件夹会保留</translation>
        </message>
        <message>
            <source>the dataset {name} (version {version}) appears at {path} before the script starts: {target} fetches it from {uri} unless it has it already</source>
            <translation>数据集 {name}（版本 {version}）会在脚本启动前出现在 {path}：{target} 会从 {uri} 获取它，除非本机已有</translation>
        </message>
        <message>
            <source>Data: the dataset {name}, version {version}, from {uri}</source>
            <translation>数据：数据集 {name}，版本 {version}，来自 {uri}</translation>
        </message>
        <message>
            <source>the dataset {name} (version {version}) appears at {path} before the script starts: {target} fetches it from {source} itself unless it has it already</source>
            <translation>数据集 {name}（版本 {version}）会在脚本开始前出现在 {path}：{target} 自己从 {source} 获取它，除非已经有了</translation>
        </message>
    </context>
    <context>
        <name>SettingsDialog</name>
        <message>
            <source>'{region}' is not a region gpudesk knows. Choose one from the list, e.g. us-east-1 or ap-shanghai, or leave it empty.</source>
            <translation>“{region}”不是 gpudesk 认识的地域。请从列表中选择，例如 us-east-1 或 ap-shanghai，或留空。</translation>
        </message>
        <message>
            <source>Enter a percentage above 0 and at most 100, e.g. 35.</source>
            <translation>请输入大于 0 且不超过 100 的百分比，例如 35。</translation>
        </message>
        <message>
            <source>Enter yuan per dollar, above 0 and at most 1000, e.g. 7.2.</source>
            <translation>请输入每美元兑换的人民币元数，大于 0 且不超过 1000，例如 7.2。</translation>
        </message>
        <message>
            <source>Enter US dollars, 0 (no budget) or more, e.g. 500.</source>
            <translation>请输入美元金额，0（不设预算）或更多，例如 500。</translation>
        </message>
        <message>
            <source>Enter US dollars, 0 (the hours above) or more, e.g. 50.</source>
            <translation>请输入美元金额，0（使用上面的小时数）或更多，例如 50。</translation>
        </message>
        <message>
            <source>Enter hours above 0 and at most 8784, e.g. 24 (a day of the machine).</source>
            <translation>请输入大于 0 且不超过 8784 的小时数，例如 24（机器运行一天）。</translation>
        </message>
        <message>
            <source>Enter a percentage from 0 to 100, e.g. 5.</source>
            <translation>请输入 0 到 100 之间的百分比，例如 5。</translation>
        </message>
        <message>
            <source>Enter whole minutes from 1 to 1440, e.g. 30.</source>
            <translation>请输入 1 到 1440 之间的整数分钟，例如 30。</translation>
        </message>
        <message>
            <source>Enter whole days from 0 (keep) to 3650, e.g. 30.</source>
            <translation>请输入 0（保留）到 3650 的整数天数，例如 30。</translation>
        </message>
        <message>
            <source>Enter a whole number from 1 to 1000, e.g. 3.</source>
            <translation>请输入 1 到 1000 的整数，例如 3。</translation>
        </message>
        <message>
            <source>Enter whole minutes from 5 to 10080, e.g. 60.</source>
            <translation>请输入 5 到 10080 的整数分钟，例如 60。</translation>
        </message>
        <message>
            <source>, </source>
            <translation>、</translation>
        </message>
        <message>
            <source>Please correct: {fields}</source>
            <translation>请更正：{fields}</translation>
        </message>
        <message>
            <source>Cannot save the settings: {error}</source>
            <translation>无法保存设置：{error}</translation>
        </message>
        <message>
            <source>Machine budgets only warn: nothing is stopped.</source>
            <translation>机器预算只发出警告：不会停止任何机器。</translation>
        </message>
        <message>
            <source>{hours} h × its price</source>
            <translation>{hours} 小时 × 其价格</translation>
        </message>
        <message>
            <source>Every machine launches with a budget of {hours} hours of its price unless you choose another (or none) when you launch it; a fixed amount below replaces the hours.</source>
            <translation>每台机器启动时的预算是其 {hours} 小时的费用，除非你在启动时另选预算（或不设预算）；下面的固定金额会取代小时数。</translation>
        </message>
        <message>
            <source>The cloud itself releases it at the release time that budget ÷ price gives, even if gpudesk and the agent are gone.</source>
            <translation>即使 gpudesk 和代理都已不在，云平台也会在按 预算 ÷ 价格 算出的释放时间自行释放它。</translation>
        </message>
        <message>
            <source>The cloud itself terminates it when budget ÷ price runs out, even if gpudesk and the agent are gone.</source>
            <translation>即使 gpudesk 和代理都已不在，当 预算 ÷ 价格 用完时，云平台也会自行销毁它。</translation>
        </message>
        <message>
            <source>At 100 % of the monthly budget, gpudesk stops every billing machine (while gpudesk runs).</source>
            <translation>月度预算用到 100 % 时，gpudesk 会停止所有正在计费的机器（在 gpudesk 运行期间）。</translation>
        </message>
        <message>
            <source>At 100 % of the monthly budget, gpudesk terminates every billing machine (while gpudesk runs).</source>
            <translation>月度预算用到 100 % 时，gpudesk 会销毁所有正在计费的机器（在 gpudesk 运行期间）。</translation>
        </message>
        <message>
            <source>No budget is set yet, so nothing is stopped: enter a monthly budget or a budget per machine above.</source>
            <translation>尚未设置预算，因此不会停止任何机器：请在上方输入月度预算或单机预算。</translation>
        </message>
        <message>
            <source>No budget is set yet, so nothing is terminated: enter a monthly budget or a budget per machine above.</source>
            <translation>尚未设置预算，因此不会销毁任何机器：请在上方输入月度预算或单机预算。</translation>
        </message>
        <message>
            <source>No budget per machine: no single machine is stopped for its own spend.</source>
            <translation>没有单机预算：不会因单台机器自身的花费而停止它。</translation>
        </message>
        <message>
            <source>No budget per machine: no single machine is terminated for its own spend.</source>
            <translation>没有单机预算：不会因单台机器自身的花费而销毁它。</translation>
        </message>
        <message>
            <source>Preferences</source>
            <translation>偏好设置</translation>
        </message>
        <message>
            <source>General</source>
            <translation>常规</translation>
        </message>
        <message>
            <source>Money</source>
            <translation>费用</translation>
        </message>
        <message>
            <source>Idle machines</source>
            <translation>空闲机器</translation>
        </message>
        <message>
            <source>Run data in the bucket</source>
            <translation>存储桶中的运行数据</translation>
        </message>
        <message>
            <source>&amp;Language</source>
            <translation>语言(&amp;L)</translation>
        </message>
        <message>
            <source>&amp;Theme</source>
            <translation>主题(&amp;T)</translation>
        </message>
        <message>
            <source>Default &amp;region</source>
            <translation>默认地域(&amp;R)</translation>
        </message>
        <message>
            <source>Default &amp;MFU (%)</source>
            <translation>默认 MFU (%)(&amp;M)</translation>
        </message>
        <message>
            <source>Show prices &amp;in</source>
            <translation>价格显示币种(&amp;I)</translation>
        </message>
        <message>
            <source>CNY per USD (your &amp;rate)</source>
            <translation>1 美元兑人民币（自定汇率）(&amp;R)</translation>
        </message>
        <message>
            <source>Monthly &amp;budget (USD, 0 = none)</source>
            <translation>每月预算（美元，0 = 不限）(&amp;B)</translation>
        </message>
        <message>
            <source>Budget per machine: &amp;hours of its price</source>
            <translation>单机预算：按其价格计的小时数(&amp;H)</translation>
        </message>
        <message>
            <source>Or a fixed budget per &amp;machine (USD, 0 = the hours)</source>
            <translation>或固定的单机预算（美元，0 = 按小时数）(&amp;M)</translation>
        </message>
        <message>
            <source>Idle below GPU &amp;utilisation (%)</source>
            <translation>GPU 利用率低于此值视为空闲 (%)(&amp;U)</translation>
        </message>
        <message>
            <source>Idle f&amp;or (minutes)</source>
            <translation>空闲持续时间（分钟）(&amp;O)</translation>
        </message>
        <message>
            <source>When idle, &amp;do</source>
            <translation>空闲时操作(&amp;D)</translation>
        </message>
        <message>
            <source>Delete a run's folder after (&amp;days, 0 = keep)</source>
            <translation>运行结束后删除其文件夹（天，0 = 保留）(&amp;D)</translation>
        </message>
        <message>
            <source>Checkpoints &amp;kept per run</source>
            <translation>每次运行保留的检查点数(&amp;K)</translation>
        </message>
        <message>
            <source>Wait for spot capacity (mi&amp;nutes)</source>
            <translation>等待竞价容量（分钟）(&amp;N)</translation>
        </message>
        <message>
            <source>&amp;At 100 % of a budget, do</source>
            <translation>预算用满 100% 时(&amp;A)</translation>
        </message>
        <message>
            <source>System</source>
            <translation>跟随系统</translation>
        </message>
        <message>
            <source>Light</source>
            <translation>浅色</translation>
        </message>
        <message>
            <source>Dark</source>
            <translation>深色</translation>
        </message>
        <message>
            <source>Warn me</source>
            <translation>提醒我</translation>
        </message>
        <message>
            <source>Stop the machine</source>
            <translation>停止机器</translation>
        </message>
        <message>
            <source>Terminate the machine</source>
            <translation>销毁机器</translation>
        </message>
        <message>
            <source>Stop the billing machines</source>
            <translation>停止计费中的机器</translation>
        </message>
        <message>
            <source>Terminate the billing machines</source>
            <translation>销毁计费中的机器</translation>
        </message>
        <message>
            <source>e.g. us-east-1 or ap-shanghai; empty = none</source>
            <translation>例如 us-east-1 或 ap-shanghai；留空表示不指定</translation>
        </message>
        <message>
            <source>Model FLOPs utilisation assumed for new plans, above 0 and at most 100</source>
            <translation>新规划假定的模型算力利用率（MFU），大于 0 且不超过 100</translation>
        </message>
        <message>
            <source>Catalog prices are in USD; they are converted with this rate</source>
            <translation>目录价格以美元计，按此汇率换算</translation>
        </message>
        <message>
            <source>A whole number from 1 to 1440</source>
            <translation>1 到 1440 之间的整数</translation>
        </message>
        <message>
            <source>Counted from the day a run ends; 0 keeps every run's folder until you delete it</source>
            <translation>从运行结束当天算起；0 表示一直保留，直到你删除</translation>
        </message>
        <message>
            <source>The newest checkpoints each run keeps in the bucket; older ones are deleted</source>
            <translation>每次运行在存储桶中保留的最新检查点数；更旧的会被删除</translation>
        </message>
        <message>
            <source>A run that recovers by itself: when its group starts no machine for this long after a reclaim, gpudesk ends the group and tells you what was saved</source>
            <translation>自动恢复的运行：回收后伸缩组在这么长时间内都没启动机器时，gpudesk 会结束伸缩组，并告诉你保存了什么</translation>
        </message>
    </context>
    <context>
        <name>SizingError</name>
        <message>
            <source>this file is not a gpudesk plan</source>
            <translation>此文件不是 gpudesk 方案</translation>
        </message>
        <message>
            <source>the plan file is damaged ({detail})</source>
            <translation>方案文件已损坏（{detail}）</translation>
        </message>
        <message>
            <source>must be a whole number of at least {minimum}</source>
            <translation>必须是不小于 {minimum} 的整数</translation>
        </message>
        <message>
            <source>must be a number above zero</source>
            <translation>必须是大于零的数</translation>
        </message>
        <message>
            <source>{heads} heads do not divide hidden size {hidden}</source>
            <translation>{heads} 个头无法整除隐藏维度 {hidden}</translation>
        </message>
        <message>
            <source>{kv_heads} KV heads do not divide {heads} heads</source>
            <translation>{kv_heads} 个 KV 头无法整除 {heads} 个注意力头</translation>
        </message>
        <message>
            <source>unknown preset '{name}'; choose one of {choices}</source>
            <translation>未知预设“{name}”；可选：{choices}</translation>
        </message>
        <message>
            <source>'{value}' is not one of {choices}</source>
            <translation>“{value}”不在可选项中：{choices}</translation>
        </message>
        <message>
            <source>{precision} weights are for inference only; train in fp32, amp or bf16</source>
            <translation>{precision} 权重仅用于推理；训练请使用 fp32、amp 或 bf16</translation>
        </message>
        <message>
            <source>must be 0 (plain DDP), 1, 2 or 3</source>
            <translation>必须是 0（普通 DDP）、1、2 或 3</translation>
        </message>
        <message>
            <source>must be between 0 and 1 (e.g. 0.35 for 35%)</source>
            <translation>必须在 0 到 1 之间（如 0.35 表示 35%）</translation>
        </message>
        <message>
            <source>image size {image} is not a multiple of patch size {patch}</source>
            <translation>图像尺寸 {image} 不是 patch 大小 {patch} 的整数倍</translation>
        </message>
        <message>
            <source>{seq} tokens exceed this model's {limit}-token position table</source>
            <translation>{seq} 个 token 超出了该模型 {limit} 个位置的位置编码表</translation>
        </message>
        <message>
            <source>FSDP and DeepSpeed ZeRO both shard the model: choose one (ZeRO 0 with FSDP)</source>
            <translation>FSDP 和 DeepSpeed ZeRO 都会分片模型：只能选一个（使用 FSDP 时 ZeRO 设为 0）</translation>
        </message>
        <message>
            <source>enter a whole number, e.g. {example}</source>
            <translation>请输入整数，如 {example}</translation>
        </message>
        <message>
            <source>enter a number such as 1e9 or 2.5B</source>
            <translation>请输入数字，如 1e9 或 2.5B</translation>
        </message>
        <message>
            <source>enter a percentage between 1 and 100</source>
            <translation>请输入 1 到 100 之间的百分比</translation>
        </message>
        <message>
            <source>enter a whole number of at least {minimum}</source>
            <translation>请输入不小于 {minimum} 的整数</translation>
        </message>
        <message>
            <source>enter a number above zero, such as 1e9 or 2.5B</source>
            <translation>请输入大于零的数，例如 1e9 或 2.5B</translation>
        </message>
        <message>
            <source>fetch its config.json, or load a config.json file, first</source>
            <translation>请先获取其 config.json，或加载一个 config.json 文件</translation>
        </message>
        <message>
            <source>fix the inputs marked in red first</source>
            <translation>请先修正标红的输入</translation>
        </message>
        <message>
            <source>unknown LoRA target '{name}'; use q, k, v, o, gate, up, down, 'attention' or 'all-linear'</source>
            <translation>未知的 LoRA 目标 '{name}'；请用 q、k、v、o、gate、up、down、'attention' 或 'all-linear'</translation>
        </message>
        <message>
            <source>QLoRA trains on a 4-bit base: choose nf4, nf4-dq or fp4, not {quantize}</source>
            <translation>QLoRA 在 4 位基座上训练：请选择 nf4、nf4-dq 或 fp4，而不是 {quantize}</translation>
        </message>
        <message>
            <source>quantized weights need a transformer shape (layers, hidden, heads)</source>
            <translation>量化权重需要 Transformer 结构（层数、隐藏维度、注意力头数）</translation>
        </message>
        <message>
            <source>LoRA needs a transformer shape (a preset, config.json or layers/hidden/heads)</source>
            <translation>LoRA 需要 Transformer 结构（预设、config.json 或层数/隐藏维度/头数）</translation>
        </message>
        <message>
            <source>quantized weights cannot be fully fine-tuned; choose LoRA or QLoRA</source>
            <translation>量化权重无法全量微调；请选择 LoRA 或 QLoRA</translation>
        </message>
        <message>
            <source>{path} is not a readable config.json ({detail})</source>
            <translation>{path} 不是可读取的 config.json（{detail}）</translation>
        </message>
        <message>
            <source>this {model_type} config lacks {missing}</source>
            <translation>此 {model_type} 配置缺少 {missing}</translation>
        </message>
        <message>
            <source>model_type '{model_type}' is not one gpudesk knows and the file lacks {missing}; known: {known}</source>
            <translation>gpudesk 不认识 model_type '{model_type}'，且文件缺少 {missing}；已知类型：{known}</translation>
        </message>
        <message>
            <source>{model} is gated on Hugging Face (it needs a login): download its config.json from the model page and give its path instead</source>
            <translation>{model} 在 Hugging Face 上受限（需要登录）：请在模型页面下载其 config.json，然后改为提供文件路径</translation>
        </message>
        <message>
            <source>could not fetch the config.json of {model} ({detail}); give the path of a downloaded config.json instead</source>
            <translation>无法获取 {model} 的 config.json（{detail}）；请改为提供已下载的 config.json 的路径</translation>
        </message>
    </context>
    <context>
        <name>SizingNote</name>
        <message>
            <source>DDP gradient buckets (gradient_as_bucket_view=False)</source>
            <translation>DDP 梯度桶（gradient_as_bucket_view=False）</translation>
        </message>
        <message>
            <source>checkpointing: CNN activations taken as 1/4 (segment boundaries)</source>
            <translation>检查点：CNN 激活按 1/4 计（仅保留分段边界）</translation>
        </message>
        <message>
            <source>activations need a shape (layers, hidden); counted as 0</source>
            <translation>激活需要模型形状（层数、隐藏维度）；此处按 0 计</translation>
        </message>
        <message>
            <source>activations from layers/hidden with FFN=4h and 128-wide heads</source>
            <translation>激活按层数/隐藏维度估算，假设 FFN=4h、每头 128 维</translation>
        </message>
        <message>
            <source>DeepSpeed mixed precision: 16-bit weights/grads, fp32 master + moments</source>
            <translation>DeepSpeed 混合精度：16 位权重/梯度，fp32 主权重 + 动量</translation>
        </message>
        <message>
            <source>ZeRO-3 working set: 4 × largest layer's 16-bit parameters</source>
            <translation>ZeRO-3 工作集：最大层 16 位参数的 4 倍</translation>
        </message>
        <message>
            <source>ZeRO-Offload: states on CPU RAM with DeepSpeed's 1.5× buffer</source>
            <translation>ZeRO-Offload：状态放在 CPU 内存，按 DeepSpeed 的 1.5 倍缓冲计</translation>
        </message>
        <message>
            <source>FSDP SHARD_GRAD_OP: gradients and optimizer sharded, 16-bit parameters gathered through forward and backward</source>
            <translation>FSDP SHARD_GRAD_OP：梯度和优化器状态分片，16 位参数在前向和反向期间保持聚合</translation>
        </message>
        <message>
            <source>FSDP FULL_SHARD: states sharded; working set = 2 gathered blocks + the root module + one block's gradients</source>
            <translation>FSDP FULL_SHARD：状态分片；工作集 = 2 个聚合的块 + 根模块 + 一个块的梯度</translation>
        </message>
        <message>
            <source>FSDP CPUOffload: parameter, gradient and optimizer shards on CPU RAM</source>
            <translation>FSDP CPUOffload：参数、梯度和优化器分片位于 CPU 内存</translation>
        </message>
        <message>
            <source>NF4: linear layers in 4 bits + an fp32 scale per 64 weights; embeddings, norms, biases and the LM head stay 16-bit</source>
            <translation>NF4：线性层为 4 位 + 每 64 个权重一个 fp32 缩放因子；嵌入、归一化层、偏置和 LM 头保持 16 位</translation>
        </message>
        <message>
            <source>NF4 with double quantization: linear layers in 4 bits + 8-bit block scales; embeddings, norms, biases and the LM head stay 16-bit</source>
            <translation>NF4 双重量化：线性层为 4 位 + 8 位块缩放因子；嵌入、归一化层、偏置和 LM 头保持 16 位</translation>
        </message>
        <message>
            <source>FP4: linear layers in 4 bits + an fp32 scale per 64 weights; embeddings, norms, biases and the LM head stay 16-bit</source>
            <translation>FP4：线性层为 4 位 + 每 64 个权重一个 fp32 缩放因子；嵌入、归一化层、偏置和 LM 头保持 16 位</translation>
        </message>
        <message>
            <source>LLM.int8: linear layers in int8 + an fp32 scale per row, outliers multiplied in 16-bit; embeddings, norms, biases and the LM head stay 16-bit</source>
            <translation>LLM.int8：线性层为 int8 + 每行一个 fp32 缩放因子，离群值以 16 位相乘；嵌入、归一化层、偏置和 LM 头保持 16 位</translation>
        </message>
        <message>
            <source>includes one linear layer dequantized to 16-bit at a time</source>
            <translation>含每次一个反量化为 16 位的线性层</translation>
        </message>
        <message>
            <source>LoRA: frozen base has no gradients or optimizer state; adapters train</source>
            <translation>LoRA：冻结的基座没有梯度和优化器状态；只训练适配器</translation>
        </message>
        <message>
            <source>only the head trains: the backbone keeps no activations for backward</source>
            <translation>只训练输出头：主干不为反向传播保存激活</translation>
        </message>
        <message>
            <source>QLoRA without a quantization chosen: NF4 with double quantization</source>
            <translation>QLoRA 未选择量化方式：使用 NF4 双重量化</translation>
        </message>
        <message>
            <source>paged optimizer: its state can spill to CPU RAM under memory pressure</source>
            <translation>分页优化器：显存紧张时其状态可溢出到 CPU 内存</translation>
        </message>
    </context>
    <context>
        <name>SpotPanel</name>
        <message>
            <source>spot price per hour</source>
            <translation>每小时抢占式价格</translation>
        </message>
        <message>
            <source>hour of day (UTC)</source>
            <translation>一天中的小时（UTC）</translation>
        </message>
        <message>
            <source>mean price</source>
            <translation>平均价格</translation>
        </message>
        <message>
            <source>Spot: interruption risk and price history</source>
            <translation>抢占式：中断风险与价格历史</translation>
        </message>
        <message>
            <source>Show price history</source>
            <translation>显示价格历史</translation>
        </message>
        <message>
            <source>Checkpoint and restart times from</source>
            <translation>检查点与重启时间取自</translation>
        </message>
        <message>
            <source>gpudesk's defaults</source>
            <translation>gpudesk 的默认值</translation>
        </message>
        <message>
            <source>A run's own history: the gaps between its checkpoints, how long each took to write, and how long it took to go on after each reclaim.</source>
            <translation>某次运行自己的历史：各检查点之间的间隔、每个检查点的写入用时，以及每次被回收后恢复运行所用的时间。</translation>
        </message>
        <message>
            <source>Interruption rate: {label} over 30 days ({source})</source>
            <translation>中断率：30 天内 {label}（{source}）</translation>
        </message>
        <message>
            <source>Spot placement score: {score} of 10 ({source})</source>
            <translation>Spot 放置分数：{score}/10（{source}）</translation>
        </message>
        <message>
            <source>Expected cost: not known without a rate; at least {cost}</source>
            <translation>预期费用：没有中断率无法得知；至少 {cost}</translation>
        </message>
        <message>
            <source>Expected cost: never finishes at this rate with these checkpoints</source>
            <translation>预期费用：以此中断率和检查点间隔，任务无法完成</translation>
        </message>
        <message>
            <source>Expected cost {cost} ({low}–{high}), {hours} with {n} interruptions on average; uninterrupted {plain}</source>
            <translation>预期费用 {cost}（{low}–{high}），{hours}，平均中断 {n} 次；不中断为 {plain}</translation>
        </message>
        <message>
            <source> (assumed)</source>
            <translation>（假定值）</translation>
        </message>
        <message>
            <source>Checkpoint every {every} min, restart {restart} min{assumed}; cheapest interval: {best}</source>
            <translation>每 {every} 分钟保存检查点，重启 {restart} 分钟{assumed}；最省钱的间隔：{best}</translation>
        </message>
        <message>
            <source>{m} min</source>
            <translation>{m} 分钟</translation>
        </message>
        <message>
            <source>only at the end</source>
            <translation>仅在结束时</translation>
        </message>
        <message>
            <source>Price history: not fetched (needs the cloud's account)</source>
            <translation>价格历史：尚未获取（需要该云的账号）</translation>
        </message>
        <message>
            <source>Price history: {source}, {zones} zones, in {currency}</source>
            <translation>价格历史：{source}，{zones} 个可用区，单位 {currency}</translation>
        </message>
    </context>
    <context>
        <name>SpotRates</name>
        <message>
            <source>interruption rate: not published</source>
            <translation>中断率：未公布</translation>
        </message>
        <message>
            <source>interruption rate: not known yet</source>
            <translation>中断率：尚不知道</translation>
        </message>
        <message>
            <source>Tencent Cloud's CVM API publishes no interruption rate</source>
            <translation>腾讯云 CVM API 不公布中断率</translation>
        </message>
        <message>
            <source>AWS Spot Instance Advisor: no row for this type here (no snapshot bundled; refresh prices to read it)</source>
            <translation>AWS Spot Instance Advisor：此处没有该机型的数据（未附带快照；刷新价格即可读取）</translation>
        </message>
        <message>
            <source>Alibaba Cloud DescribeSpotAdvice: not asked yet (needs an account) or no answer for this type</source>
            <translation>阿里云 DescribeSpotAdvice：尚未查询（需要账号），或没有该机型的答复</translation>
        </message>
        <message>
            <source>This job on spot: expected {expected} ({low} to {high}) and {hours} h to finish at interruption rate {rate} ({source}); a {chance} chance that the {budget} budget runs out before the job finishes.</source>
            <translation>此作业使用抢占式实例：预计 {expected}（{low} 至 {high}），按中断率 {rate}（{source}）预计 {hours} 小时完成；{budget} 的预算在作业完成前用完的可能性为 {chance}。</translation>
        </message>
        <message>
            <source>The group ends itself when the {budget} budget runs out, after {end} h of machines: a {chance} chance that this comes before the job's expected finish ({hours} h).</source>
            <translation>预算 {budget} 用完时（机器运行 {end} 小时后）该组会自行结束：这一时刻早于作业预计完成时间（{hours} 小时）的可能性为 {chance}。</translation>
        </message>
        <message>
            <source>This job costs {cost} if never interrupted ({compute} h); {rate} ({source}), so the chance that the budget runs out first is not known.</source>
            <translation>若从不中断，此作业花费 {cost}（{compute} 小时）；{rate}（{source}），因此无法知道预算先用完的可能性。</translation>
        </message>
        <message>
            <source>At interruption rate {rate} ({source}) this job is not expected to finish: it loses work faster than it saves it. Checkpoint more often.</source>
            <translation>按中断率 {rate}（{source}），预计此作业无法完成：它丢失进度的速度快于保存进度的速度。请更频繁地保存检查点。</translation>
        </message>
    </context>
    <context>
        <name>SpotRecovery</name>
        <message>
            <source>Run {run} ran on {n} machines; gpudesk recovers single-machine runs. Start it again with gpudesk run --resume {run} once every machine is back.</source>
            <translation>运行 {run} 使用了 {n} 台机器；gpudesk 只自动恢复单机运行。请在所有机器恢复后用 gpudesk run --resume {run} 重新启动。</translation>
        </message>
        <message>
            <source>The machine {machine} is not a cloud machine gpudesk launched, so gpudesk cannot launch another like it. Choose a machine to resume on.</source>
            <translation>机器 {machine} 不是 gpudesk 启动的云机器，因此无法启动一台同样的机器。请选择一台机器来继续运行。</translation>
        </message>
        <message>
            <source>The machine {machine} has spent {spent} USD of its {budget} USD budget, so gpudesk does not launch another like it: a replacement is held to what is left of the budget. Raise the budget (gpudesk budget) to go on.</source>
            <translation>机器 {machine} 已花费 {spent} USD（预算 {budget} USD），因此 gpudesk 不会再启动一台相同的机器：替代机器只能使用剩余的预算。要继续，请提高预算（gpudesk budget）。</translation>
        </message>
        <message>
            <source>launching a machine like {machine}</source>
            <translation>正在启动一台与 {machine} 相同的机器</translation>
        </message>
        <message>
            <source>copied {n} checkpoint files to {target}; the run resumes from {checkpoint}</source>
            <translation>已将 {n} 个检查点文件复制到 {target}；运行将从 {checkpoint} 继续</translation>
        </message>
        <message>
            <source>run {run} has a bucket ({uri}), but {target} was given no way into it; it resumes from the copies on this computer</source>
            <translation>运行 {run} 有存储桶（{uri}），但 {target} 没有获得访问权限；它将从这台电脑上的副本恢复</translation>
        </message>
        <message>
            <source>no checkpoint of run {run} was copied off the lost machine; it starts again from the beginning</source>
            <translation>运行 {run} 没有从丢失的机器上复制出任何检查点；它将从头开始</translation>
        </message>
    </context>
    <context>
        <name>Ssh</name>
        <message>
            <source>Could not reach {target} over SSH after {attempts} attempts ({detail}). Check that the machine is running and that its SSH port {port} is open to this computer.</source>
            <translation>尝试 {attempts} 次后仍无法通过 SSH 连接 {target}（{detail}）。请检查机器是否在运行，以及它的 SSH 端口 {port} 是否对这台电脑开放。</translation>
        </message>
        <message>
            <source>Could not reach {target} over SSH ({detail}). Check that the machine is running and that its SSH port {port} is open to this computer.</source>
            <translation>无法通过 SSH 连接 {target}（{detail}）。请检查机器是否在运行，以及它的 SSH 端口 {port} 是否对这台电脑开放。</translation>
        </message>
        <message>
            <source>nothing answers on that port: the connection was refused</source>
            <translation>该端口上没有服务应答：连接被拒绝</translation>
        </message>
        <message>
            <source>no answer in time</source>
            <translation>没有及时应答</translation>
        </message>
        <message>
            <source>this computer has no route to it</source>
            <translation>这台电脑没有到它的路由</translation>
        </message>
        <message>
            <source>its name was not found</source>
            <translation>找不到它的名称</translation>
        </message>
        <message>
            <source>the connection was closed before SSH answered</source>
            <translation>SSH 应答之前连接就被关闭了</translation>
        </message>
        <message>
            <source>what answers there does not speak SSH</source>
            <translation>在那里应答的不是 SSH 服务</translation>
        </message>
        <message>
            <source>the key was not accepted</source>
            <translation>密钥未被接受</translation>
        </message>
        <message>
            <source>the key file needs its passphrase</source>
            <translation>密钥文件需要它的口令</translation>
        </message>
        <message>
            <source>it does not accept SSH keys</source>
            <translation>它不接受 SSH 密钥</translation>
        </message>
        <message>
            <source>{target} refused the SSH key for user {user} ({detail}). Check the user name and that the machine was started with this key.</source>
            <translation>{target} 拒绝了用户 {user} 的 SSH 密钥（{detail}）。请检查用户名，以及机器是否用此密钥启动。</translation>
        </message>
        <message>
            <source>No SSH key was given for {target}.</source>
            <translation>没有为 {target} 提供 SSH 密钥。</translation>
        </message>
        <message>
            <source>{target} was reached, but gpudesk has no key to log in as {user}: no key file is set and the ssh-agent offers none. This is an authentication problem, not the network: choose the machine's key file (Accounts → your own machines), or add the key to your ssh-agent (ssh-add).</source>
            <translation>已连到 {target}，但 gpudesk 没有可用于以 {user} 登录的密钥：未设置密钥文件，ssh-agent 也没有提供密钥。这是身份验证问题，不是网络问题：请选择该机器的密钥文件（账号 → 你自己的机器），或把密钥加入 ssh-agent（ssh-add）。</translation>
        </message>
        <message>
            <source>The SSH connection to {target} dropped while {what}. gpudesk reconnects on the next step; try again.</source>
            <translation>与 {target} 的 SSH 连接在 {what} 时断开。gpudesk 会在下一步重新连接；请重试。</translation>
        </message>
        <message>
            <source>{target} did not finish {what} within {seconds} seconds.</source>
            <translation>{target} 没有在 {seconds} 秒内完成 {what}。</translation>
        </message>
        <message>
            <source>{what} failed on {target} with exit status {status}: {stderr}</source>
            <translation>{what} 在 {target} 上失败，退出状态 {status}：{stderr}</translation>
        </message>
        <message>
            <source>'{text}' is not an SSH target; write it as ssh://user@host:port.</source>
            <translation>'{text}' 不是 SSH 目标；请写成 ssh://user@host:port。</translation>
        </message>
        <message>
            <source>The connection to {target} was closed by gpudesk.</source>
            <translation>与 {target} 的连接已被 gpudesk 关闭。</translation>
        </message>
        <message>
            <source>The SSH key file {target} does not exist.</source>
            <translation>SSH 密钥文件 {target} 不存在。</translation>
        </message>
        <message>
            <source>login user unknown</source>
            <translation>登录用户未知</translation>
        </message>
        <message>
            <source>Set it with: gpudesk login-user {machine} USER (root on Alibaba Cloud and most Tencent Cloud images, ubuntu on Ubuntu images, ec2-user on Amazon Linux).</source>
            <translation>用以下命令设置：gpudesk login-user {machine} USER（阿里云和大多数腾讯云镜像为 root，Ubuntu 镜像为 ubuntu，Amazon Linux 为 ec2-user）。</translation>
        </message>
        <message>
            <source>gpudesk does not know who logs in on {machine}: the cloud did not say it for the machine's image, and gpudesk does not guess. Set it with: gpudesk login-user {machine} USER (root on Alibaba Cloud and most Tencent Cloud images, ubuntu on Ubuntu images, ec2-user on Amazon Linux).</source>
            <translation>gpudesk 不知道用哪个用户登录 {machine}：云没有说明该机器镜像的登录用户，gpudesk 也不会猜。用以下命令设置：gpudesk login-user {machine} USER（阿里云和大多数腾讯云镜像为 root，Ubuntu 镜像为 ubuntu，Amazon Linux 为 ec2-user）。</translation>
        </message>
    </context>
    <context>
        <name>SshConfig</name>
        <message>
            <source>gpudesk did not change {config}: adding the Include line needs your consent.</source>
            <translation>gpudesk 没有修改 {config}：添加 Include 行需要你的同意。</translation>
        </message>
        <message>
            <source>The path {path} cannot be written into an OpenSSH config (it contains a quote, a wildcard or a line break). Set GPUDESK_HOME to a simpler folder.</source>
            <translation>路径 {path} 无法写入 OpenSSH 配置（其中含有引号、通配符或换行）。请把 GPUDESK_HOME 设为更简单的文件夹。</translation>
        </message>
        <message>
            <source>No ssh-agent is running for this session ({detail}). Start one (eval "$(ssh-agent)", or the OpenSSH Authentication Agent service on Windows) and try again.</source>
            <translation>当前会话没有运行 ssh-agent（{detail}）。请启动一个（eval "$(ssh-agent)"，或 Windows 上的 OpenSSH Authentication Agent 服务）后重试。</translation>
        </message>
        <message>
            <source>ssh-add refused the key {key} (exit status {status}): {detail}</source>
            <translation>ssh-add 拒绝了密钥 {key}（退出状态 {status}）：{detail}</translation>
        </message>
        <message>
            <source>ssh-add was not found. Install the OpenSSH client and try again.</source>
            <translation>找不到 ssh-add。请安装 OpenSSH 客户端后重试。</translation>
        </message>
        <message>
            <source>The key file {path} does not exist.</source>
            <translation>密钥文件 {path} 不存在。</translation>
        </message>
        <message>
            <source>The keyring has no SSH key '{key}': it is created when gpudesk launches a machine.</source>
            <translation>密钥环中没有 SSH 密钥“{key}”：它会在 gpudesk 启动机器时创建。</translation>
        </message>
    </context>
    <context>
        <name>Storage</name>
        <message>
            <source>The bucket name {name} is already taken (by another account, or in another region), so gpudesk uses {new_name} in {region} instead and remembers it.</source>
            <translation>存储桶名称 {name} 已被占用（被其他账号或在其他地域），因此 gpudesk 改用 {region} 中的 {new_name}，并记住它。</translation>
        </message>
        <message>
            <source>No free bucket name was found after {tries} tries (last: {name}).</source>
            <translation>尝试 {tries} 次后仍未找到可用的存储桶名称（最后一次：{name}）。</translation>
        </message>
        <message>
            <source>A COS bucket name needs the account's APPID; none is known for this account.</source>
            <translation>COS 存储桶名称需要账号的 APPID；此账号的 APPID 未知。</translation>
        </message>
        <message>
            <source>The cloud refused the request: {action} was denied for this account on {target}. Allow {action} in the account's policy and try again.</source>
            <translation>云厂商拒绝了请求：此账号在 {target} 上没有 {action} 权限。请在账号策略中允许 {action} 后重试。</translation>
        </message>
        <message>
            <source>The storage service answered {code}: {detail}</source>
            <translation>存储服务返回 {code}：{detail}</translation>
        </message>
        <message>
            <source>The storage service at {endpoint} could not be reached ({reason}).</source>
            <translation>无法连接到 {endpoint} 的存储服务（{reason}）。</translation>
        </message>
        <message>
            <source>The download was cancelled: whole files stay, the file being fetched was removed.</source>
            <translation>下载已取消：完整的文件保留，正在下载的文件已删除。</translation>
        </message>
        <message>
            <source>The download of {path} stopped after {done} of {total} bytes ({reason}); nothing was kept under its name.</source>
            <translation>{path} 的下载在 {done} / {total} 字节时停止（{reason}）；没有以该名称保留任何文件。</translation>
        </message>
        <message>
            <source>The run's manifest.json cannot be read ({reason}); no checkpoint is counted as complete.</source>
            <translation>无法读取该运行的 manifest.json（{reason}）；没有检查点被视为完整。</translation>
        </message>
        <message>
            <source>No {what} price for {cloud} in {region} was read from the cloud's price page, so gpudesk shows no figure rather than a guess.</source>
            <translation>未从云厂商的价格页面读到 {cloud} 在 {region} 的{what}价格，因此 gpudesk 不显示数字，而不是猜测。</translation>
        </message>
        <message>
            <source>No {what} price for {cloud} in {region}: this cloud publishes no price list that can be read without an account, so gpudesk shows no figure rather than a guess.</source>
            <translation>没有 {cloud} 在 {region} 的{what}价格：该云没有无需账号即可读取的公开价目表，因此 gpudesk 不显示数字，而不是猜测。</translation>
        </message>
        <message>
            <source>No {what} price for {cloud} in {region} yet: AWS's public price list (AmazonS3) has not been read for this region. Tools → Refresh prices from my clouds, gpudesk spend and gpudesk outputs read it.</source>
            <translation>暂时没有 {cloud} 在 {region} 的{what}价格：尚未为该地域读取 AWS 的公开价目表（AmazonS3）。“工具 → 从我的云账号刷新价格”、gpudesk spend 和 gpudesk outputs 都会读取它。</translation>
        </message>
        <message>
            <source>No {what} price for {cloud} in {region}: AWS's public price list (AmazonS3) could not be read ({detail}), so gpudesk shows no figure rather than a guess.</source>
            <translation>没有 {cloud} 在 {region} 的{what}价格：无法读取 AWS 的公开价目表（AmazonS3）（{detail}），因此 gpudesk 不显示数字，而不是猜测。</translation>
        </message>
        <message>
            <source>No {what} price for {cloud} in {region}: AWS's price list for S3 there (published {published}) gives no single such price.</source>
            <translation>没有 {cloud} 在 {region} 的{what}价格：AWS 在该地域的 S3 价目表（发布于 {published}）没有给出唯一的此项价格。</translation>
        </message>
        <message>
            <source>storage (GB-month)</source>
            <translation>存储（GB·月）</translation>
        </message>
        <message>
            <source>data-out</source>
            <translation>出流量</translation>
        </message>
        <message>
            <source>PUT, COPY, POST or LIST request</source>
            <translation>PUT、COPY、POST 或 LIST 请求</translation>
        </message>
        <message>
            <source>GET request</source>
            <translation>GET 请求</translation>
        </message>
        <message>
            <source>'{text}' is not a store address: write s3://bucket/prefix, cos://bucket-appid/prefix or oss://bucket/prefix.</source>
            <translation>“{text}”不是存储地址：请写成 s3://bucket/prefix、cos://bucket-appid/prefix 或 oss://bucket/prefix。</translation>
        </message>
        <message>
            <source>'{bucket}' is not a valid {cloud} bucket name: {why}</source>
            <translation>“{bucket}”不是有效的 {cloud} 存储桶名称：{why}</translation>
        </message>
        <message>
            <source>it must be {low} to {high} characters long.</source>
            <translation>长度必须为 {low} 到 {high} 个字符。</translation>
        </message>
        <message>
            <source>only lowercase letters, digits and hyphens are allowed, and it must start and end with a letter or digit.</source>
            <translation>只允许小写字母、数字和连字符，且必须以字母或数字开头和结尾。</translation>
        </message>
        <message>
            <source>a COS bucket is named &lt;name&gt;-&lt;APPID&gt;, ending in the account's numeric APPID.</source>
            <translation>COS 存储桶名称为 &lt;name&gt;-&lt;APPID&gt;，以账号的数字 APPID 结尾。</translation>
        </message>
        <message>
            <source>with the region its domain name {host} is longer than COS's 60 characters.</source>
            <translation>加上地域后，其域名 {host} 超过了 COS 的 60 个字符限制。</translation>
        </message>
        <message>
            <source>'{run}' is not a run id (letters, digits, '-', '_' and '.' only).</source>
            <translation>“{run}”不是运行 ID（只能包含字母、数字、“-”、“_”和“.”）。</translation>
        </message>
        <message>
            <source>'{path}' is not a relative path inside the run.</source>
            <translation>“{path}”不是运行内的相对路径。</translation>
        </message>
        <message>
            <source>no {cloud} account keys are in the keyring to make the run's bucket keys</source>
            <translation>密钥环中没有 {cloud} 账户密钥,无法为本次运行生成存储桶密钥</translation>
        </message>
        <message>
            <source>the store {uri} is on another cloud than the machine ({cloud})</source>
            <translation>存储位置 {uri} 与机器({cloud})不在同一个云上</translation>
        </message>
        <message>
            <source>the bucket could not be prepared ({detail})</source>
            <translation>无法准备存储桶({detail})</translation>
        </message>
        <message>
            <source>The AWS keys gpudesk has are themselves short-lived (a role's or a session's), and AWS lets only an IAM user's long-lived keys call sts:GetFederationToken. Add an IAM user's keys on the Accounts page to give machines keys limited to their run.</source>
            <translation>gpudesk 持有的 AWS 密钥本身就是短期密钥(角色或会话的密钥),而 AWS 只允许 IAM 用户的长期密钥调用 sts:GetFederationToken。请在“账户”页面添加一个 IAM 用户的密钥,以便为机器提供仅限于其运行的密钥。</translation>
        </message>
        <message>
            <source>These are the Alibaba Cloud account's own (root) keys, and Alibaba Cloud lets only a RAM user or role call sts:AssumeRole. Add a RAM user's keys (with AliyunSTSAssumeRoleAccess) on the Accounts page to give machines keys limited to their run.</source>
            <translation>这是阿里云主账号自己的(root)密钥,而阿里云只允许 RAM 用户或角色调用 sts:AssumeRole。请在“账户”页面添加一个 RAM 用户的密钥(需具备 AliyunSTSAssumeRoleAccess),以便为机器提供仅限于其运行的密钥。</translation>
        </message>
        <message>
            <source>A RAM role named {role} exists but does not trust this account, so gpudesk does not use or change it. Rename or delete it, or let acs:ram::{account}:root assume it.</source>
            <translation>已存在名为 {role} 的 RAM 角色,但它不信任此账号,因此 gpudesk 不会使用或修改它。请重命名或删除它,或允许 acs:ram::{account}:root 扮演它。</translation>
        </message>
        <message>
            <source>The session policy for {target} is {length} characters long; {cloud} takes at most {limit}. Choose a shorter bucket prefix.</source>
            <translation>{target} 的会话策略长 {length} 个字符;{cloud} 最多接受 {limit} 个。请选择更短的存储桶前缀。</translation>
        </message>
        <message>
            <source>The cloud refused to set up the role of the run's machines: {action} was denied for this account on {target}. Allow {action} in the account's policy and try again.</source>
            <translation>云平台拒绝为本次运行的机器设置角色：此账号在 {target} 上执行 {action} 被拒绝。请在账号的策略中允许 {action} 后重试。</translation>
        </message>
        <message>
            <source>A role named {role} already exists and is not trusted by {service}, so it is not gpudesk's and gpudesk does not change it. Rename or delete it and try again.</source>
            <translation>名为 {role} 的角色已存在，且不受 {service} 信任，因此它不属于 gpudesk，gpudesk 不会修改它。请将其重命名或删除后重试。</translation>
        </message>
        <message>
            <source>gpudesk has no API keys for {cloud} to set up the role of the run's machines.</source>
            <translation>gpudesk 没有 {cloud} 的 API 密钥，无法为本次运行的机器设置角色。</translation>
        </message>
        <message>
            <source>{path} is not a folder: give the folder to push.</source>
            <translation>{path} 不是文件夹：请给出要上传的文件夹。</translation>
        </message>
        <message>
            <source>{path} holds no file to push.</source>
            <translation>{path} 中没有可上传的文件。</translation>
        </message>
        <message>
            <source>'{name}' is not a dataset name (letters, digits, '.', '_' and '-', at most 64, starting with a letter or digit).</source>
            <translation>“{name}”不是有效的数据集名称（只能包含字母、数字、“.”、“_”和“-”，最多 64 个字符，以字母或数字开头）。</translation>
        </message>
        <message>
            <source>The name {name} is taken by another dataset in {store} (pushed from {source}). Choose another name, or remove it first: gpudesk data rm {name}.</source>
            <translation>名称 {name} 已被 {store} 中的另一个数据集占用（从 {source} 上传）。请换一个名称，或先删除它：gpudesk data rm {name}。</translation>
        </message>
        <message>
            <source>No complete dataset named {name} is in {store}.</source>
            <translation>{store} 中没有名为 {name} 的完整数据集。</translation>
        </message>
        <message>
            <source>No dataset named {name} is known here: push it first (gpudesk data push DIR {name}) or give its bucket with --store.</source>
            <translation>此处不知道名为 {name} 的数据集：请先上传它（gpudesk data push DIR {name}），或用 --store 指定它所在的存储桶。</translation>
        </message>
        <message>
            <source>No bucket to push to: give one with --store s3://bucket/prefix (cos://, oss:// with --region).</source>
            <translation>没有可上传到的存储桶：请用 --store s3://bucket/prefix 指定一个（cos://、oss:// 需同时给出 --region）。</translation>
        </message>
        <message>
            <source>The push of {name} was cancelled; nothing is listed as a dataset (the next push reuses what was sent).</source>
            <translation>{name} 的上传已取消；没有任何内容被列为数据集（下次上传会复用已发送的部分）。</translation>
        </message>
        <message>
            <source>{path} changed while it was pushed; push again.</source>
            <translation>{path} 在上传过程中发生了变化；请重新上传。</translation>
        </message>
        <message>
            <source>The bucket {bucket} does not exist ({cloud} answered 404). Create it first, or give another bucket as the store.</source>
            <translation>存储桶 {bucket} 不存在（{cloud} 返回 404）。请先创建它，或指定另一个存储桶。</translation>
        </message>
        <message>
            <source>The bucket {bucket} refused the {cloud} account's keys ({code}). Allow {action} on it for these keys, or give a bucket this account may use.</source>
            <translation>存储桶 {bucket} 拒绝了该 {cloud} 账号的密钥（{code}）。请为这些密钥在该存储桶上允许 {action}，或指定该账号可以使用的存储桶。</translation>
        </message>
        <message>
            <source>The bucket {bucket} could not be reached at {endpoint} ({reason}). Check the network and the bucket's region, then try again.</source>
            <translation>无法通过 {endpoint} 访问存储桶 {bucket}（{reason}）。请检查网络和存储桶所在地域，然后重试。</translation>
        </message>
        <message>
            <source>No {cloud} account keys are in the keyring to check the bucket {bucket} and to give runs keys to it. Add them first: gpudesk accounts add {provider}.</source>
            <translation>密钥环中没有 {cloud} 账号的密钥，无法检查存储桶 {bucket}，也无法为运行发放访问它的密钥。请先添加：gpudesk accounts add {provider}。</translation>
        </message>
        <message>
            <source>The bucket {bucket} is on {cloud}, whose address names the bucket's region: give its region too (e.g. {example}).</source>
            <translation>存储桶 {bucket} 位于 {cloud}，其地址包含存储桶所在地域：请同时给出地域（例如 {example}）。</translation>
        </message>
        <message>
            <source>The bucket {bucket} could not be checked: {cloud} answered {code}.</source>
            <translation>无法检查存储桶 {bucket}：{cloud} 返回 {code}。</translation>
        </message>
        <message>
            <source>Run {run} reads the dataset {name} from {uri}, but gets no keys to that bucket ({why}); it was not started.</source>
            <translation>运行 {run} 需要从 {uri} 读取数据集 {name}，但没有获得该存储桶的密钥（{why}）；运行未启动。</translation>
        </message>
        <message>
            <source>The dataset {name} is in {data}, not in the run's bucket {store}: give --store {data} (or none) to read it.</source>
            <translation>数据集 {name} 位于 {data}，而不在运行的存储桶 {store} 中：请使用 --store {data}（或不指定）来读取它。</translation>
        </message>
        <message>
            <source>A queued run cannot read a dataset yet: start it now, or clear the Data field.</source>
            <translation>排队的运行暂时无法读取数据集：请立即启动它，或清空“数据”字段。</translation>
        </message>
        <message>
            <source>The dataset source {source} cannot be read ({why}); the run was not started.</source>
            <translation>无法读取数据集来源 {source}（{why}）；运行未启动。</translation>
        </message>
        <message>
            <source>Give the region of the bucket in {source} with --store-region: a {cloud} bucket's address names its region.</source>
            <translation>请用 --store-region 给出 {source} 中存储桶的地域：{cloud} 存储桶的地址包含其地域。</translation>
        </message>
        <message>
            <source>'{text}' is not a Hugging Face dataset: write hf://datasets/ORG/NAME or hf:ORG/NAME, optionally with @revision.</source>
            <translation>“{text}”不是 Hugging Face 数据集：请写 hf://datasets/ORG/NAME 或 hf:ORG/NAME，可加 @revision。</translation>
        </message>
        <message>
            <source>AWS's price list for S3 in {region} (published {published}) gives no single price for data out to {to}</source>
            <translation>AWS 在 {region} 的 S3 价格表（发布于 {published}）没有给出发往 {to} 的唯一数据传出价格</translation>
        </message>
        <message>
            <source>machines read OSS at its public endpoint, which Alibaba Cloud bills as outbound internet traffic; no such price was read</source>
            <translation>机器通过 OSS 的公网访问端点读取，阿里云按外网流出流量计费；未读到该价格</translation>
        </message>
        <message>
            <source>{cloud} publishes no price list that can be read without an account, so gpudesk shows no figure for traffic between its regions rather than a guess</source>
            <translation>{cloud} 没有无需账号即可读取的价格表，因此 gpudesk 不显示其地域间流量的金额，而不是猜一个</translation>
        </message>
        <message>
            <source>Upload of dataset {name} to {cloud} {region}</source>
            <translation>数据集 {name} 上传到 {cloud} {region}</translation>
        </message>
        <message>
            <source>Copy of dataset {name} from {cloud} {region} to {to}</source>
            <translation>数据集 {name} 从 {cloud} {region} 复制到 {to}</translation>
        </message>
        <message>
            <source>Machine download of dataset {name} from {cloud} {region} to {to}</source>
            <translation>机器从 {cloud} {region} 下载数据集 {name} 到 {to}</translation>
        </message>
        <message>
            <source>{what}: {size} × {price} {currency}/GB = {cost} {currency} ({source}, {date})</source>
            <translation>{what}：{size} × {price} {currency}/GB = {cost} {currency}（{source}，{date}）</translation>
        </message>
        <message>
            <source>{what}: {size}, free ({source}, read {date})</source>
            <translation>{what}：{size}，免费（{source}，读取于 {date}）</translation>
        </message>
        <message>
            <source>{what}: {size}, price not known ({why})</source>
            <translation>{what}：{size}，价格未知（{why}）</translation>
        </message>
        <message>
            <source>{gb} GB × {price} {currency}/GB-month = {cost} {currency} a month ({source}, {date})</source>
            <translation>{gb} GB × {price} {currency}/GB·月 = 每月 {cost} {currency}（{source}，{date}）</translation>
        </message>
        <message>
            <source>{gb} GB a month, price not known ({why})</source>
            <translation>每月 {gb} GB，价格未知（{why}）</translation>
        </message>
        <message>
            <source>Copying dataset {name} from {source} ({from_region}) to {target} ({to_region}) sends {size} in {files} files between regions, billed as data out of {from_region}: {cost}.</source>
            <translation>将数据集 {name} 从 {source}（{from_region}）复制到 {target}（{to_region}），在地域之间传送 {size}，共 {files} 个文件，按 {from_region} 的数据传出计费：{cost}。</translation>
        </message>
        <message>
            <source>{gb} GB × {price} {currency}/GB = {amount} {currency} ({source}, {date})</source>
            <translation>{gb} GB × {price} {currency}/GB = {amount} {currency}（{source}，{date}）</translation>
        </message>
        <message>
            <source>the price is not known ({why}); copy only if you accept a charge gpudesk cannot say</source>
            <translation>价格未知（{why}）；只有在接受一笔 gpudesk 说不出金额的费用时才复制</translation>
        </message>
        <message>
            <source>Dataset {name} has every file in {target} ({to_region}) already: nothing is copied and nothing is billed for data out; only its manifest is written.</source>
            <translation>数据集 {name} 的所有文件已在 {target}（{to_region}）中：不复制任何内容，也不产生数据传出费用；只写入其清单。</translation>
        </message>
        <message>
            <source>Copy dataset {name} to {target}?</source>
            <translation>将数据集 {name} 复制到 {target}？</translation>
        </message>
        <message>
            <source>{target} is in {region}, the region dataset {name} is in already: a machine there reads it from {source}.</source>
            <translation>{target} 位于 {region}，数据集 {name} 已在该地域：那里的机器直接从 {source} 读取。</translation>
        </message>
        <message>
            <source>Dataset {name} is on {cloud}; {target} is not. gpudesk copies a dataset only between buckets of one cloud.</source>
            <translation>数据集 {name} 在 {cloud} 上；{target} 不是。gpudesk 只在同一云的存储桶之间复制数据集。</translation>
        </message>
        <message>
            <source>gpudesk copies datasets between regions on AWS S3 only: {cloud}'s copy between regions was not tested here. Push the folder to a bucket in {region} instead: gpudesk data push DIR {name} --store URI --region {region}.</source>
            <translation>gpudesk 只在 AWS S3 上跨地域复制数据集：{cloud} 的跨地域复制未在此测试。请改为把文件夹推送到 {region} 的存储桶：gpudesk data push DIR {name} --store URI --region {region}。</translation>
        </message>
        <message>
            <source>The copy of dataset {name} was not confirmed; nothing was copied.</source>
            <translation>数据集 {name} 的复制未被确认；没有复制任何内容。</translation>
        </message>
        <message>
            <source>The copy of dataset {name} was cancelled; nothing is listed in {target} (the next copy reuses what was copied).</source>
            <translation>数据集 {name} 的复制已取消；{target} 中没有列出任何内容（下次复制会重用已复制的部分）。</translation>
        </message>
        <message>
            <source>{name}: {files} files, {size} in {where} ({region}), version {version}; a machine in {region} reads this copy</source>
            <translation>{name}：{files} 个文件，{size}，位于 {where}（{region}），版本 {version}；{region} 的机器读取这份副本</translation>
        </message>
        <message>
            <source>Dataset {name} is in {source} ({from_region}); the machine is in {to_region}. Copy it to a bucket of yours in {to_region} first, then start the run again: gpudesk data copy {name} --to {cloud_scheme}://BUCKET/PREFIX --to-region {to_region}. Copying its {size}: {cost}.</source>
            <translation>数据集 {name} 在 {source}（{from_region}）；机器在 {to_region}。请先把它复制到你在 {to_region} 的存储桶，然后重新开始运行：gpudesk data copy {name} --to {cloud_scheme}://BUCKET/PREFIX --to-region {to_region}。复制其 {size}：{cost}。</translation>
        </message>
        <message>
            <source>Copy the dataset?</source>
            <translation>复制数据集？</translation>
        </message>
        <message>
            <source>Copy</source>
            <translation>复制</translation>
        </message>
    </context>
    <context>
        <name>Sync</name>
        <message>
            <source>{path} is not a folder.</source>
            <translation>{path} 不是文件夹。</translation>
        </message>
        <message>
            <source>The machine has no working python3 ({detail}). gpudesk needs Python 3.7 or newer on the machine to sync files.</source>
            <translation>机器上没有可用的 python3（{detail}）。gpudesk 需要机器上有 Python 3.7 或更高版本才能同步文件。</translation>
        </message>
        <message>
            <source>The sync helper on the machine failed: {detail}</source>
            <translation>机器上的同步助手失败了：{detail}</translation>
        </message>
        <message>
            <source>Sync cancelled after {done} of {total} files. Files already copied are complete; none was left half-written.</source>
            <translation>同步在 {total} 个文件中完成 {done} 个后被取消。已复制的文件是完整的；没有写了一半的文件。</translation>
        </message>
        <message>
            <source>{count} files could not be written ({first}). The others were synced.</source>
            <translation>{count} 个文件无法写入（{first}）。其他文件已同步。</translation>
        </message>
        <message>
            <source>The sync process for {target} ended unexpectedly (exit status {code}). Files already copied are complete (each is renamed into place only when whole); start the run again to retry.</source>
            <translation>{target} 的同步进程意外结束（退出状态 {code}）。已复制的文件都是完整的（每个文件完整后才改名就位）；请重新启动运行以重试。</translation>
        </message>
    </context>
    <context>
        <name>TaskRunner</name>
        <message>
            <source>Something went wrong: {error}</source>
            <translation>出错了：{error}</translation>
        </message>
        <message>
            <source>gpudesk</source>
            <translation>gpudesk</translation>
        </message>
    </context>
    <context>
        <name>Telemetry</name>
        <message>
            <source>No GPU sample came from {target} within {seconds} seconds. The agent's log on the machine is {log}.</source>
            <translation>{seconds} 秒内没有从 {target} 收到 GPU 采样。机器上代理的日志位于 {log}。</translation>
        </message>
        <message>
            <source>{count} samples from {target} are missing (after sample {after}): the machine's metrics file had already rotated them away.</source>
            <translation>来自 {target} 的 {count} 个采样缺失（在第 {after} 个之后）：机器上的指标文件已将它们轮转删除。</translation>
        </message>
        <message>
            <source>The agent on {target} could not stream its samples (exit status {status}): {detail}</source>
            <translation>{target} 上的代理无法传输采样（退出状态 {status}）：{detail}</translation>
        </message>
    </context>
    <context>
        <name>TraceDialog</name>
        <message>
            <source>Trace my model</source>
            <translation>追踪我的模型</translation>
        </message>
        <message>
            <source>Model builder:</source>
            <translation>模型构造函数：</translation>
        </message>
        <message>
            <source>Example input:</source>
            <translation>示例输入：</translation>
        </message>
        <message>
            <source>mypackage.models:build or path/to/file.py:build</source>
            <translation>mypackage.models:build 或 path/to/file.py:build</translation>
        </message>
        <message>
            <source>float32[8,3,224,224] or int64[4,512]&lt;50257</source>
            <translation>float32[8,3,224,224] 或 int64[4,512]&lt;50257</translation>
        </message>
        <message>
            <source>Trace</source>
            <translation>追踪</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>Bytes per GPU</source>
            <translation>每卡字节数</translation>
        </message>
        <message>
            <source>Weights</source>
            <translation>权重</translation>
        </message>
        <message>
            <source>Gradients</source>
            <translation>梯度</translation>
        </message>
        <message>
            <source>Optimizer state</source>
            <translation>优化器状态</translation>
        </message>
        <message>
            <source>Activations</source>
            <translation>激活值</translation>
        </message>
        <message>
            <source>Temporary</source>
            <translation>临时张量</translation>
        </message>
        <message>
            <source>Peak (allocator)</source>
            <translation>峰值（分配器）</translation>
        </message>
        <message>
            <source>Tracing needs PyTorch, which is not installed. Install it with pip install "gpudesk[trace]"; the analytical estimate needs nothing.</source>
            <translation>追踪需要 PyTorch，但尚未安装。请用 pip install "gpudesk[trace]" 安装；解析估算无需任何依赖。</translation>
        </message>
        <message>
            <source>Builds your model under fake tensors: no memory is used and no weights are loaded. Batch, precision and optimizer come from the Plan page.</source>
            <translation>在伪张量（FakeTensor）下构建模型：不占用显存，也不加载权重。批大小、精度和优化器取自“规划”页。</translation>
        </message>
        <message>
            <source>Trace cancelled.</source>
            <translation>追踪已取消。</translation>
        </message>
        <message>
            <source>Give both the model builder and an example input.</source>
            <translation>请同时填写模型构造函数和示例输入。</translation>
        </message>
        <message>
            <source>Tracing…</source>
            <translation>正在追踪…</translation>
        </message>
        <message>
            <source>{params} parameters, traced on {device}.</source>
            <translation>{params} 个参数，在 {device} 上追踪。</translation>
        </message>
    </context>
    <context>
        <name>WatchPage</name>
        <message>
            <source>a machine, or ssh://user@host:port</source>
            <translation>选择机器，或输入 ssh://用户@主机:端口</translation>
        </message>
        <message>
            <source>key file (ssh:// and own machines)</source>
            <translation>密钥文件（ssh:// 和自有机器）</translation>
        </message>
        <message>
            <source>stop it</source>
            <translation>停止机器</translation>
        </message>
        <message>
            <source>terminate it</source>
            <translation>销毁机器</translation>
        </message>
        <message>
            <source>warn</source>
            <translation>警告</translation>
        </message>
        <message>
            <source>{action} after {minutes:g} min with every GPU under {pct:g} %</source>
            <translation>所有 GPU 低于 {pct:g} % 持续 {minutes:g} 分钟后{action}</translation>
        </message>
        <message>
            <source>{action} at {cap:.2f} {currency} spent</source>
            <translation>花费达到 {cap:.2f} {currency} 时{action}</translation>
        </message>
        <message>
            <source>watch for a spot interruption</source>
            <translation>监视竞价实例中断</translation>
        </message>
        <message>
            <source>; </source>
            <translation>；</translation>
        </message>
        <message>
            <source>warnings only</source>
            <translation>仅警告</translation>
        </message>
        <message>
            <source>The run's upload state could not be read: {why}</source>
            <translation>无法读取该运行的上传状态：{why}</translation>
        </message>
        <message>
            <source>from the machine: {key}</source>
            <translation>来自机器配置：{key}</translation>
        </message>
        <message>
            <source>from the machine: the ssh-agent</source>
            <translation>来自机器配置：ssh-agent</translation>
        </message>
        <message>
            <source>from the machine: the key in the keyring</source>
            <translation>来自机器配置：钥匙串中的密钥</translation>
        </message>
        <message>
            <source>Watch</source>
            <translation>监控</translation>
        </message>
        <message>
            <source>Stop watching</source>
            <translation>停止监控</translation>
        </message>
        <message>
            <source>Stop agent</source>
            <translation>停止代理程序</translation>
        </message>
        <message>
            <source>End gpudesk's agent on this machine (your own machine: nothing else needs it)</source>
            <translation>结束这台机器上的 gpudesk 代理程序（你自己的机器：没有其他功能依赖它）</translation>
        </message>
        <message>
            <source>Choose a machine and press Watch: gpudesk starts its agent there and shows every GPU live.</source>
            <translation>选择一台机器并点击“监控”：gpudesk 会在机器上启动代理，并实时显示每块 GPU。</translation>
        </message>
        <message>
            <source>gpudesk has not reached {machine} yet, so whether its agent runs there is not known.</source>
            <translation>gpudesk 尚未连接到 {machine}，因此不知道代理是否在那里运行。</translation>
        </message>
        <message>
            <source>The gpudesk agent keeps running on {machine} after gpudesk closes and enforces: {guard}.</source>
            <translation>gpudesk 关闭后，代理程序仍会在 {machine} 上运行并执行：{guard}。</translation>
        </message>
        <message>
            <source>The gpudesk agent keeps running on {machine} after gpudesk closes (it samples the GPUs and only warns). Stop agent ends it.</source>
            <translation>gpudesk 关闭后，代理程序仍会在 {machine} 上运行（采集 GPU 数据，只发出警告）。点击“停止代理程序”可结束它。</translation>
        </message>
        <message>
            <source>{machine}: stopping the agent…</source>
            <translation>{machine}：正在停止代理程序…</translation>
        </message>
        <message>
            <source>{machine}: the agent is stopped.</source>
            <translation>{machine}：代理程序已停止。</translation>
        </message>
        <message>
            <source>{machine}: no agent was running.</source>
            <translation>{machine}：没有正在运行的代理程序。</translation>
        </message>
        <message>
            <source>The agent was not stopped</source>
            <translation>代理程序未停止</translation>
        </message>
        <message>
            <source>Choose a machine to watch.</source>
            <translation>请选择要监控的机器。</translation>
        </message>
        <message>
            <source>{machine}: {why}</source>
            <translation>{machine}：{why}</translation>
        </message>
        <message>
            <source>{machine}: connecting and starting the agent…</source>
            <translation>{machine}：正在连接并启动代理…</translation>
        </message>
        <message>
            <source>{machine}: live.</source>
            <translation>{machine}：实时。</translation>
        </message>
        <message>
            <source>{machine}: connection lost, reconnecting (the gap is filled from the machine)…</source>
            <translation>{machine}：连接中断，正在重连（中断期间的数据会从机器补回）…</translation>
        </message>
        <message>
            <source>{machine}: not watched.</source>
            <translation>{machine}：未监控。</translation>
        </message>
        <message>
            <source>{machine}: connected. No NVIDIA GPU or driver on this machine (nvidia-smi was not found), so there is nothing to sample.</source>
            <translation>{machine}：已连接。这台机器上没有 NVIDIA GPU 或驱动（找不到 nvidia-smi），因此没有可采样的数据。</translation>
        </message>
        <message>
            <source>Run {run}: Cannot reach the bucket: {detail} (since {at}). Checkpoints are still copied to this laptop.</source>
            <translation>运行 {run}：无法访问存储桶：{detail}（自 {at} 起）。检查点仍会复制到这台电脑。</translation>
        </message>
        <message>
            <source>Run {run}: the last upload to {uri} failed: {detail} (at {at}). Checkpoints are still copied to this laptop.</source>
            <translation>运行 {run}：最近一次上传到 {uri} 失败：{detail}（于 {at}）。检查点仍会复制到这台电脑。</translation>
        </message>
        <message>
            <source>Run {run} uploads to {uri}; the agent has not reported an upload yet.</source>
            <translation>运行 {run} 上传到 {uri}；代理尚未报告任何上传。</translation>
        </message>
        <message>
            <source>checkpoint</source>
            <translation>检查点</translation>
        </message>
        <message>
            <source>log part</source>
            <translation>日志分段</translation>
        </message>
        <message>
            <source>outputs</source>
            <translation>输出</translation>
        </message>
        <message>
            <source>Run {run} → {uri}: last upload at {at}, {what} {name} ({size}).</source>
            <translation>运行 {run} → {uri}：最近一次上传于 {at}，{what} {name}（{size}）。</translation>
        </message>
        <message>
            <source>The bucket holds {n} checkpoint(s), the latest {latest}.</source>
            <translation>存储桶中有 {n} 个检查点，最新的是 {latest}。</translation>
        </message>
        <message>
            <source>The bucket holds no complete checkpoint yet.</source>
            <translation>存储桶中还没有完整的检查点。</translation>
        </message>
        <message>
            <source>Outputs: {n} file(s), {size}.</source>
            <translation>输出：{n} 个文件，{size}。</translation>
        </message>
    </context>
    <context>
        <name>WelcomeDialog</name>
        <message>
            <source>Welcome to gpudesk</source>
            <translation>欢迎使用 gpudesk</translation>
        </message>
        <message>
            <source>gpudesk tells you how much GPU memory a training or inference job needs, which cloud GPUs fit it, and what finishing it would cost. You can start right away: planning needs no account and sends nothing anywhere. When you are ready to rent, add your cloud keys (kept only in the system keyring) or a machine you already have.</source>
            <translation>gpudesk 告诉你一个训练或推理任务需要多少 GPU 显存、哪些云 GPU 放得下它，以及完成它要花多少钱。你可以马上开始：规划不需要账号，也不会向任何地方发送数据。准备租用时，添加你的云密钥（只保存在系统密钥环中）或一台你已有的机器。</translation>
        </message>
        <message>
            <source>Explore Plan without an account</source>
            <translation>无需账户，先试试规划</translation>
        </message>
        <message>
            <source>Add a cloud account</source>
            <translation>添加云账户</translation>
        </message>
        <message>
            <source>Add my own SSH machine</source>
            <translation>添加我自己的 SSH 机器</translation>
        </message>
        <message>
            <source>&amp;Language:</source>
            <translation>语言(&amp;L)：</translation>
        </message>
        <message>
            <source>System</source>
            <translation>跟随系统</translation>
        </message>
    </context>
</TS>
