/**
 * A general English ↔ Chinese glossary of software-engineering words, one entry a line:
 * `english word|中文, 中文`. Written from the common vocabulary of the field (the words any
 * bilingual engineering team, textbook or IDE localisation uses), not from any evaluation set.
 * English sides are single words (stemmed when loaded, so "databases" finds "database"); Chinese
 * sides are two or more characters (a single character matches inside too many other words).
 */
export const GLOSSARY_TEXT = `
accessibility|无障碍
access|访问
account|账号, 账户
accuracy|准确率
address|地址
agent|代理, 智能体
alarm|告警
alert|告警, 警报
algorithm|算法
allocation|分配
animation|动画
api|接口
application|应用, 应用程序
approval|审批
architecture|架构
archive|归档
argument|参数
array|数组
assertion|断言
asynchronous|异步
attribute|属性
audit|审计
authentication|认证, 身份验证
authorization|授权
autoscaling|自动扩缩容
availability|可用性
average|平均值
backend|后端
backoff|退避
backup|备份
balancer|负载均衡
bandwidth|带宽
batch|批量, 批处理
benchmark|基准测试, 性能测试
billing|计费
binary|二进制
bottleneck|瓶颈
branch|分支
breaker|熔断
browser|浏览器
budget|预算
buffer|缓冲区, 缓冲
bug|缺陷, 漏洞
build|构建, 编译
button|按钮
cache|缓存
callback|回调
canary|灰度
capacity|容量
cart|购物车
certificate|证书
channel|通道, 频道
character|字符
checkout|结账
checkpoint|检查点
checksum|校验和
class|类别
cleanup|清理
click|点击
client|客户端
cluster|集群
code|代码
column|列名
command|命令
comment|注释, 评论
commit|提交
compaction|压缩
compatibility|兼容性
compiler|编译器
compile|编译
component|组件
compression|压缩
concurrency|并发
condition|条件
configuration|配置
config|配置
conflict|冲突
connection|连接
consistency|一致性
console|控制台
constant|常量
constraint|约束
container|容器
context|上下文
controller|控制器
copy|复制, 拷贝
core|核心
coroutine|协程
cost|成本, 费用
coverage|覆盖率
cpu|处理器
crash|崩溃
credential|凭据, 凭证
cron|定时任务
cursor|游标, 光标
customer|客户
daemon|守护进程
dashboard|仪表盘, 看板
database|数据库
dataset|数据集
data|数据
date|日期
deadline|截止时间
deadlock|死锁
debugger|调试器
debug|调试
decision|决定, 决策
decode|解码
decrypt|解密
default|默认
delete|删除
dependency|依赖
deployment|部署
deploy|部署
design|设计
desktop|桌面端
developer|开发者, 开发人员
development|开发
device|设备
diff|差异
directory|目录
disk|磁盘
distributed|分布式
documentation|文档
document|文档
domain|域名
downgrade|降级
download|下载
downtime|停机时间
driver|驱动
duplicate|重复
duration|时长
email|邮件, 邮箱
embedding|嵌入, 向量
encode|编码
encoding|编码
encryption|加密
encrypt|加密
endpoint|端点, 接口地址
environment|环境
error|错误, 报错
evaluation|评估
event|事件
exception|异常
execute|执行
execution|执行
expiry|过期
export|导出
expression|表达式
extension|扩展
failover|故障转移
failure|失败, 故障
fallback|回退, 降级
fault|故障
feature|功能, 特性
feedback|反馈
field|字段
file|文件
filter|过滤, 筛选
firewall|防火墙
fix|修复
flag|标志
folder|文件夹
font|字体
foreign|外键
fork|分叉
format|格式
framework|框架
frontend|前端
function|函数
garbage|垃圾回收
gateway|网关
graph|图表
handshake|握手
hardware|硬件
hash|哈希, 散列
header|头部, 请求头
healthcheck|健康检查
heap|堆内存
heartbeat|心跳
histogram|直方图
host|主机
hotfix|热修复
icon|图标
idempotent|幂等
idle|空闲
image|镜像, 图片
implementation|实现
import|导入
incident|事故, 故障
index|索引
inference|推理
infrastructure|基础设施
ingest|写入
inheritance|继承
input|输入
installation|安装
install|安装
instance|实例
integer|整数
integration|集成
interface|接口
interrupt|中断
interval|间隔
inventory|库存
invoice|发票
isolation|隔离
issue|问题, 工单
iteration|迭代
jitter|抖动
job|任务
kernel|内核
keyboard|键盘
key|密钥
label|标签
language|语言
latency|延迟, 时延
layer|层级
layout|布局
leak|泄漏, 泄露
library|库文件, 类库
license|许可证
limit|限制, 上限
link|链接
linter|代码检查
list|列表
load|负载, 加载
locale|区域设置
localization|本地化
local|本地
lock|加锁, 锁定
logging|日志
login|登录
logout|登出, 退出登录
log|日志
loop|循环
machine|机器
maintenance|维护
median|中位数
meeting|会议
memory|内存
menu|菜单
merge|合并
message|消息
metadata|元数据
method|方法
metric|指标
middleware|中间件
migration|迁移
milestone|里程碑
mirror|镜像
mobile|移动端
mock|模拟
model|模型
module|模块
monitoring|监控
monitor|监控
mount|挂载
mutex|互斥锁
namespace|命名空间
network|网络
node|节点
notification|通知
null|空值
object|对象
observability|可观测性
offline|离线
online|在线
operator|运算符, 操作员
optimization|优化
option|选项
orchestration|编排
order|顺序, 订单
outage|宕机, 故障
output|输出
overflow|溢出
owner|负责人
package|软件包
page|页面
pagination|分页
parallel|并行
parameter|参数
parser|解析器
parse|解析
partition|分区
password|密码
patch|补丁
path|路径
payload|载荷
payment|支付
peak|峰值
percentile|百分位
performance|性能
permission|权限
pipeline|流水线
platform|平台
plugin|插件
pointer|指针
policy|策略
pool|连接池
port|端口
price|价格
primary|主键, 主要
priority|优先级
private|私有
privilege|权限
procedure|存储过程
process|进程, 流程
production|生产环境
profile|配置文件, 性能分析
programming|编程
program|程序
project|项目
prompt|提示词
property|属性
proposal|提案, 方案
protocol|协议
proxy|代理
publish|发布
pull|拉取
push|推送
query|查询
queue|队列
quota|配额
random|随机
rate|速率
read|读取
rebase|变基
recovery|恢复
recursion|递归
redirect|重定向
refactoring|重构
refactor|重构
reference|引用
refund|退款
regex|正则表达式
region|区域
registry|注册表, 仓库
regression|回归
release|发布, 版本
reliability|可靠性
remote|远程
rendering|渲染
render|渲染
replication|复制
replica|副本
report|报告
repository|仓库, 代码库
request|请求
requirement|需求
resource|资源
response|响应
restart|重启
restore|还原, 恢复
result|结果
retention|保留
retry|重试
review|审查, 评审
roadmap|路线图
rollback|回滚
rollout|上线, 灰度发布
root|根目录
router|路由器
route|路由
row|数据行
runtime|运行时
sampling|采样
sandbox|沙箱
scalability|可扩展性
scaling|扩容, 扩缩容
scheduler|调度器
schedule|调度, 计划
schema|模式, 表结构
scope|作用域, 范围
screen|屏幕
script|脚本
scroll|滚动
search|搜索
secret|机密, 秘密
security|安全
semaphore|信号量
serial|串行
server|服务器
service|服务
session|会话
setting|设置
sharding|分片
shard|分片
shell|终端
shipping|发货, 物流
shutdown|关机, 停机
signature|签名
snapshot|快照
socket|套接字
software|软件
sort|排序
source|源码
specification|规范
speed|速度
spike|突增
sprint|冲刺
stack|堆栈
staging|预发布, 预发环境
statement|语句
storage|存储
stream|流式
string|字符串
style|样式
subscription|订阅
summary|摘要, 总结
support|支持
synchronization|同步
synchronous|同步
sync|同步
syntax|语法
system|系统
table|数据表
tag|标签
task|任务
team|团队
template|模板
tenant|租户
terminal|终端
testing|测试
test|测试
theme|主题
thread|线程
threshold|阈值
throttle|限流
throttling|限流
throughput|吞吐量
ticket|工单
timeout|超时
timestamp|时间戳
timezone|时区
token|令牌
tool|工具
trace|追踪, 链路
traffic|流量
training|训练
transaction|事务, 交易
translation|翻译
trigger|触发器
type|类型
upgrade|升级
upload|上传
username|用户名
user|用户
validation|校验, 验证
value|数值
variable|变量
vector|向量
verification|验证
version|版本
view|视图
virtual|虚拟
volume|存储卷
vulnerability|漏洞
warning|警告
webhook|回调地址
website|网站
wildcard|通配符
window|窗口
worker|工作进程
workflow|工作流
write|写入
`
