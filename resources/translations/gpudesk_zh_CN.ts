<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
    <context>
        <name>AboutDialog</name>
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
            <source>Needs {used} per GPU. Pick an offer to compare.</source>
            <translation>每卡需要 {used}。请选择一个报价进行比较。</translation>
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
    </context>
    <context>
        <name>MainWindow</name>
        <message>
            <source>Plan</source>
            <translation>规划</translation>
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
            <source>&amp;Help</source>
            <translation>帮助(&amp;H)</translation>
        </message>
        <message>
            <source>&amp;About gpudesk</source>
            <translation>关于 gpudesk(&amp;A)</translation>
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
            <source>KV cache</source>
            <translation>KV 缓存</translation>
        </message>
        <message>
            <source>CUDA context &amp; buffers</source>
            <translation>CUDA 上下文与缓冲区</translation>
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
            <translation>按需</translation>
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
            <source>$/h</source>
            <translation>$/小时</translation>
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
    </context>
    <context>
        <name>PlanForm</name>
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
            <source>Transformer shape</source>
            <translation>Transformer 结构</translation>
        </message>
        <message>
            <source>Parameter count</source>
            <translation>参数量</translation>
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
            <source>Flash attention</source>
            <translation>Flash Attention</translation>
        </message>
        <message>
            <source>CPU offload (ZeRO)</source>
            <translation>CPU 卸载（ZeRO）</translation>
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
            <source>Spot</source>
            <translation>竞价实例</translation>
        </message>
        <message>
            <source>Max $/h</source>
            <translation>最高 $/小时</translation>
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
            <source>cost to finish</source>
            <translation>完成总费用</translation>
        </message>
        <message>
            <source>$/h</source>
            <translation>$/小时</translation>
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
            <source>All providers</source>
            <translation>全部云厂商</translation>
        </message>
        <message>
            <source>All regions</source>
            <translation>全部地域</translation>
        </message>
        <message>
            <source>Enter a model to see what it needs.</source>
            <translation>输入模型即可查看所需资源。</translation>
        </message>
        <message>
            <source>{price}/h ({market})</source>
            <translation>{price}/小时（{market}）</translation>
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
    </context>
    <context>
        <name>SettingsDialog</name>
        <message>
            <source>Please correct: {fields}</source>
            <translation>请更正：{fields}</translation>
        </message>
        <message>
            <source>Cannot save the settings: {error}</source>
            <translation>无法保存设置：{error}</translation>
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
            <source>Budget per &amp;machine (USD, 0 = none)</source>
            <translation>每台机器预算（美元，0 = 不限）(&amp;M)</translation>
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
            <source>fix the inputs marked in red first</source>
            <translation>请先修正标红的输入</translation>
        </message>
    </context>
    <context>
        <name>SizingNote</name>
        <message>
            <source>DDP gradient buckets (gradient_as_bucket_view=False)</source>
            <translation>DDP 梯度桶（gradient_as_bucket_view=False）</translation>
        </message>
        <message>
            <source>includes autocast's 16-bit weight cache (2 bytes/parameter)</source>
            <translation>含 autocast 的 16 位权重缓存（每参数 2 字节）</translation>
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
            <translation>在伪张量（fake tensor）下构建模型：不占用显存，也不加载权重。批大小、精度和优化器取自“规划”页。</translation>
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
        <name>WelcomeDialog</name>
        <message>
            <source>Adding a cloud account is coming in a later version. For now you can plan with list prices, no account needed.</source>
            <translation>添加云账户将在后续版本中提供。目前你可以使用公开价格进行规划，无需账户。</translation>
        </message>
        <message>
            <source>Adding your own SSH machine is coming in a later version. For now you can plan with list prices.</source>
            <translation>添加自己的 SSH 机器将在后续版本中提供。目前你可以使用公开价格进行规划。</translation>
        </message>
        <message>
            <source>Welcome to gpudesk</source>
            <translation>欢迎使用 gpudesk</translation>
        </message>
        <message>
            <source>gpudesk tells you how much GPU memory a training or inference job needs, which cloud GPUs fit it, and what finishing it would cost. You can start right away: planning needs no account and sends nothing anywhere.</source>
            <translation>gpudesk 会告诉你一个训练或推理任务需要多少显存、哪些云 GPU 放得下，以及完成它要花多少钱。现在就可以开始：规划无需账户，也不会向任何地方发送数据。</translation>
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
