# ruff: noqa: E501 - the vocabulary tables keep one object a line
"""Generated tool catalogs with questions whose right tool is known, for tool retrieval.

A catalog is every (object, action) pair of the vocabulary below: 17 domains (finance,
weather, food, travel, code, calendar, messaging, maps, health, shopping, media, news,
devops, education, smart home, sports, property and jobs), about 150 objects, each with the
actions that make sense for it, as real APIs expose resources (get_issue, list_issues,
create_issue, …). Each tool is described in English or in Chinese (a seeded coin), and some
Chinese-described tools have Chinese names. Its arguments follow its object and action.

The wording comes from a `Wording`: how names are spelled (snake_case or camelCase), the
description templates and the question templates, per action. The tests use `TEST_WORDING`
(camelCase names) and `TEST_SEED`; bench/tool_retrieval.py has its own wording (snake_case,
other templates) and seed, so the tests do not hold a figure tuned on the benchmark's data.

A question names the object by its primary term or a synonym (only the first synonym is in
the description: the others the index has never seen) and an entity of the domain (a
company, a city, a dish), as users do.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

from chainkit.tools import Tool

Language = Literal["en", "zh"]
QuestionKind = Literal["described", "unseen synonym", "cross-language"]


@dataclass(frozen=True, slots=True)
class Obj:
    slug: str
    en: str
    zh: str
    en_alts: tuple[str, ...]
    zh_alts: tuple[str, ...]
    arg: str
    arg_zh: str
    actions: str


@dataclass(frozen=True, slots=True)
class Domain:
    name: str
    entities_en: tuple[str, ...]
    entities_zh: tuple[str, ...]
    objects: tuple[Obj, ...]


def _domain(name: str, entities_en: str, entities_zh: str, table: str) -> Domain:
    objects = []
    for line in table.strip().splitlines():
        slug, en, zh, en_alts, zh_alts, arg, arg_zh, actions = (f.strip() for f in line.split("|"))
        objects.append(
            Obj(
                slug,
                en,
                zh,
                tuple(en_alts.split(",")),
                tuple(zh_alts.split(",")),
                arg,
                arg_zh,
                actions,
            )
        )
    return Domain(
        name, tuple(entities_en.split(",")), tuple(entities_zh.split(",")), tuple(objects)
    )


# slug | English | Chinese | English synonyms | Chinese synonyms | argument | its Chinese | actions
# Actions: G get, L list, C create, U update, D delete, S search, H history, E export,
# A alerts, K compare, F forecast, N analyze, B book, X cancel, R recommend, M send, P play,
# O turn on/off.
DOMAINS = (
    _domain(
        "finance",
        "Tesla,Apple,NVIDIA,Alibaba,Microsoft",
        "贵州茅台,腾讯,比亚迪,招商银行,宁德时代",
        """
stock_quote|stock quote|股票报价|share price,stock price|股价,股票价格|symbol|股票代码|GHAKFNE
dividend|dividend|股息|dividend payout,dividend yield|分红,派息|symbol|股票代码|GHKALEF
earnings_report|earnings report|财报|quarterly results,net profit|季度业绩,净利润|company|公司|GHKNSEL
exchange_rate|exchange rate|汇率|currency conversion rate,forex rate|外汇牌价,货币兑换率|currency pair|货币对|GHAFKNE
crypto_price|cryptocurrency price|加密货币价格|bitcoin price,crypto quote|比特币价格,币价|coin|币种|GHAKFNE
portfolio|investment portfolio|投资组合|holdings,positions|持仓,资产配置|account|账户|GCUNEDLH
loan_application|loan application|贷款申请|mortgage application,credit application|房贷申请,信贷申请|applicant|申请人|CUGXLDS
bank_transaction|bank transaction|银行交易记录|bank statement entry,account transaction|流水,账单明细|account|账户|LSENGHA
tax_return|tax return|纳税申报|income tax filing,tax form|个税申报,报税|tax year|纳税年度|CGUEHML
invoice|invoice|发票|bill,receipt|账单,收据|customer|客户|CLGDEMSUX
""",
    ),
    _domain(
        "weather",
        "Beijing,Paris,Tokyo,New York,London",
        "北京,上海,广州,成都,杭州",
        """
temperature|temperature|气温|how hot or cold,degrees|温度,冷热|city|城市|GHFKANE
precipitation|precipitation|降水|rain,rainfall|下雨,降雨量|city|城市|GHFAKNE
air_quality|air quality index|空气质量指数|AQI,smog level|空气质量,雾霾|city|城市|GHFAKNE
uv_index|UV index|紫外线指数|sun exposure,ultraviolet level|紫外线强度,防晒指数|city|城市|GFHAKE
wind_speed|wind speed|风速|wind,gusts|风力,大风|city|城市|GFAHKE
typhoon_track|typhoon track|台风路径|hurricane path,tropical storm|台风,热带风暴|storm name|台风名称|GHALF
pollen_count|pollen count|花粉浓度|allergy forecast,pollen level|花粉过敏,花粉指数|city|城市|GFAHKE
humidity|humidity|湿度|dampness,moisture in the air|空气湿度,潮湿程度|city|城市|GHFKAE
sunrise_time|sunrise and sunset time|日出日落时间|sunrise,sunset|日出,日落|city|城市|GKH
weather_warning|severe weather warning|气象预警|weather alert,storm warning|天气预警,暴雨预警|region|地区|LAGHS
""",
    ),
    _domain(
        "food",
        "pizza,sushi,ramen,tacos,lasagna",
        "火锅,小笼包,烤鸭,麻辣烫,饺子",
        """
recipe|recipe|菜谱|cooking instructions,how to cook|做法,食谱|dish|菜名|GSRCUDEL
restaurant|restaurant|餐厅|place to eat,diner|饭店,馆子|cuisine|菜系|SRKGLAN
table_reservation|table reservation|餐桌预订|restaurant booking,table booking|订座,订餐位|restaurant|餐厅|BXLUG
food_delivery_order|food delivery order|外卖订单|takeout order,delivery|外卖,点餐|restaurant|餐厅|CXGLHAE
nutrition_facts|nutrition facts|营养成分|calories,nutritional information|热量,卡路里|food|食物|GKNSE
grocery_list|grocery list|购物清单|shopping list,groceries|买菜清单,采购单|item|商品|CUGDEM
meal_plan|meal plan|膳食计划|weekly menu,diet plan|饮食计划,食谱安排|diet|饮食类型|CGURDEL
wine_pairing|wine pairing|配酒建议|wine match,which wine goes with|葡萄酒搭配,配什么酒|dish|菜名|GRSL
food_review|food review|美食点评|restaurant review,dish rating|餐厅评价,口碑|restaurant|餐厅|LCSNDU
""",
    ),
    _domain(
        "travel",
        "Paris,Tokyo,Bali,Rome,Bangkok",
        "三亚,西安,丽江,厦门,桂林",
        """
flight|flight|航班|plane ticket,air ticket|机票,飞机票|destination|目的地|SBXGKAH
hotel_room|hotel room|酒店房间|accommodation,place to stay|住宿,宾馆|city|城市|SBXRKGLA
train_ticket|train ticket|火车票|rail ticket,high-speed rail|高铁票,动车票|route|线路|SBXGAKL
car_rental|car rental|租车|rental car,hire a car|汽车租赁,自驾租车|city|城市|SBXKGL
visa_requirement|visa requirement|签证要求|entry requirements,do I need a visa|签证政策,入境要求|country|国家|GKASL
tourist_attraction|tourist attraction|旅游景点|sights,places to visit|景区,好玩的地方|city|城市|SRLGBK
travel_itinerary|travel itinerary|旅行行程|trip plan,travel schedule|行程安排,旅游路线|trip|旅程|CUGEDMLR
travel_insurance|travel insurance|旅行保险|trip insurance,travel cover|旅游险,出行保险|trip|旅程|BKGXS
flight_status|flight status|航班动态|flight delay,is my flight on time|航班延误,起降时间|flight number|航班号|GAHL
baggage_allowance|baggage allowance|行李额度|luggage limit,checked bag allowance|托运行李限额,行李规定|airline|航空公司|GKSL
""",
    ),
    _domain(
        "code",
        "Python,Rust,React,Kubernetes,TypeScript",
        "支付模块,登录页面,订单服务,用户接口,数据库迁移",
        """
repository|code repository|代码仓库|git repo,project source|仓库,源码库|owner|所有者|SCLDGUN
pull_request|pull request|合并请求|PR,code review request|PR,代码合并|repository|仓库|CLGUXSNA
code_review|code review|代码审查|review comments,code feedback|代码评审,审阅意见|pull request|合并请求|CGLNUS
ci_build|CI build|持续集成构建|pipeline run,build job|流水线,构建任务|branch|分支|GLHAXCN
unit_test|unit test|单元测试|test case,test suite|测试用例,测试集|module|模块|CNLGDU
bug_report|bug report|缺陷报告|issue,bug ticket|bug,问题单|project|项目|CSUGLDEA
code_snippet|code snippet|代码片段|sample code,example code|示例代码,代码示例|language|编程语言|SCRDGU
package_dependency|package dependency|依赖包|library version,package|第三方库,依赖版本|package|包名|LUNGSA
regular_expression|regular expression|正则表达式|regex pattern,pattern matching|正则,匹配规则|pattern|模式|CNSGL
sql_query|SQL query|SQL查询|database query,SELECT statement|数据库查询,SQL语句|database|数据库|CNHGEL
""",
    ),
    _domain(
        "calendar",
        "Monday,the team meeting,next Friday,Alice,the quarterly review",
        "周一,周会,下周五,张经理,季度评审",
        """
calendar_event|calendar event|日程|meeting,appointment|会议,约会|date|日期|CUDLSGEA
reminder|reminder|提醒事项|alarm,remind me|闹钟,备忘提醒|time|时间|CDLUG
todo_item|to-do item|待办事项|task,to-do|任务,待办|list|清单|CUDLESG
note|note|笔记|memo,notebook entry|便签,记事|notebook|笔记本|CSDEUGL
document|document|文档|file,doc|文件,资料|folder|文件夹|SCELDMGU
meeting_room|meeting room|会议室|conference room,room booking|会议室预订,会议空间|building|楼宇|SBXLG
time_off_request|time-off request|请假申请|vacation request,leave|年假,休假|employee|员工|CGXLU
timesheet|timesheet|工时表|hours worked,time tracking|工时记录,打卡时长|employee|员工|GUENL
""",
    ),
    _domain(
        "messaging",
        "Alice,Bob,the sales team,my manager,the support group",
        "小王,李总,销售团队,客服群,老板",
        """
email|email|电子邮件|mail,message in my inbox|邮件,邮箱消息|recipient|收件人|MSLDGE
sms|text message|短信|SMS,text|手机短信,信息|phone number|手机号|MLSD
chat_message|chat message|聊天消息|Slack message,instant message|群消息,即时消息|channel|频道|MSLDE
contact|contact|联系人|address book entry,phone contact|通讯录,联系方式|name|姓名|CUSDGEL
voicemail|voicemail|语音信箱|voice message,missed call recording|语音留言,留言|phone number|手机号|LDGPN
video_call|video call|视频会议|Zoom call,video meeting|视频通话,线上会议|participant|参会人|CXLB
newsletter|newsletter|电子报|mailing list,email digest|订阅邮件,简报|topic|主题|AMCLED
""",
    ),
    _domain(
        "maps",
        "the airport,Central Park,downtown,the train station,my office",
        "机场,天安门,市中心,火车站,公司",
        """
driving_route|driving route|驾车路线|directions,how to get to|导航,怎么走|destination|目的地|GKSE
traffic_condition|traffic condition|路况|traffic jam,congestion|堵车,交通拥堵|road|道路|GAFH
parking_spot|parking spot|停车位|car park,parking lot|停车场,车位|location|位置|SBRXG
gas_station|gas station|加油站|petrol station,fuel|加油,油价|location|位置|SRKGL
ev_charger|EV charging station|充电桩|electric car charger,charging point|充电站,新能源充电|location|位置|SBGXA
transit_schedule|public transit schedule|公交时刻表|bus timetable,subway schedule|地铁时刻,公交线路|line|线路|GASL
ride|ride-hailing trip|网约车行程|taxi,Uber ride|打车,出租车|pickup point|上车点|BXGHL
place|point of interest|地点|nearby place,location|附近地点,兴趣点|keyword|关键词|SGRK
geocode|geocoding|地理编码|coordinates,latitude and longitude|经纬度,坐标|address|地址|GSL
""",
    ),
    _domain(
        "health",
        "running,yoga,my knee,ibuprofen,swimming",
        "跑步,瑜伽,膝盖,布洛芬,游泳",
        """
workout|workout|健身训练|exercise session,training session|锻炼,运动记录|activity|运动类型|CLHRNDU
step_count|step count|步数|steps walked,pedometer|走路步数,计步|date|日期|GHKAEN
sleep_record|sleep record|睡眠记录|sleep quality,hours of sleep|睡眠质量,睡了多久|night|夜晚|GHNEL
heart_rate|heart rate|心率|pulse,BPM|脉搏,心跳|date|日期|GHANE
medication_reminder|medication reminder|服药提醒|pill reminder,medicine schedule|吃药提醒,用药时间|medicine|药品|CDLUG
doctor_appointment|doctor appointment|医生预约|clinic visit,see a doctor|挂号,看医生|department|科室|BXLG
symptom|symptom|症状|health problem,what's wrong with me|不舒服,病症|body part|身体部位|NSGL
body_weight|body weight|体重|weight,BMI|体重变化,体重指数|user|用户|CHNG
food_diary|food diary|饮食日记|calorie log,meals eaten|饮食记录,吃了什么|date|日期|CGNEL
""",
    ),
    _domain(
        "shopping",
        "headphones,a laptop,running shoes,a coffee machine,a winter jacket",
        "耳机,笔记本电脑,跑鞋,咖啡机,羽绒服",
        """
product|product|商品|item,goods|产品,货品|keyword|关键词|SGKRA
price_history|price history|历史价格|price trend,price drop|价格走势,降价|product|商品|GAKE
shopping_cart|shopping cart|购物车|basket,cart|购物篮,购物车商品|product|商品|GUDE
order|order|订单|purchase,my order|购买记录,下单|order id|订单号|CXGLEH
shipment|shipment tracking|物流跟踪|package tracking,delivery status|快递,物流信息|tracking number|运单号|GAL
return_request|return request|退货申请|refund,send back|退款,退换货|order id|订单号|CGXL
coupon|coupon|优惠券|discount code,promo code|折扣码,促销码|store|店铺|SLGR
product_review|product review|商品评价|customer review,rating|用户评价,评分|product|商品|LCNS
wishlist|wishlist|心愿单|saved items,wish list|收藏夹,心愿清单|user|用户|CUDG
""",
    ),
    _domain(
        "media",
        "Taylor Swift,jazz,Inception,the Beatles,Friends",
        "周杰伦,古典音乐,流浪地球,三体,相声",
        """
song|song|歌曲|track,music|音乐,单曲|artist|歌手|SRGP
playlist|playlist|歌单|music list,mix|播放列表,音乐合集|mood|心情|CUPDR
podcast|podcast|播客|podcast episode,show|电台节目,有声节目|topic|主题|SPARG
movie|movie|电影|film,cinema|影片,大片|title|片名|SRGK
movie_showtime|movie showtime|电影场次|cinema schedule,showtimes|排片,放映时间|cinema|影院|GBL
tv_show|TV show|电视剧|series,episode|剧集,综艺|title|剧名|SRAG
book|book|图书|novel,ebook|书籍,小说|author|作者|SRGK
lyrics|song lyrics|歌词|words of the song,lyric|歌曲歌词,唱词|song|歌名|GSL
video|video|视频|clip,YouTube video|短视频,影片片段|keyword|关键词|SPDR
""",
    ),
    _domain(
        "news",
        "the election,AI,the Olympics,climate change,the stock market",
        "两会,人工智能,奥运会,气候变化,股市",
        """
headline|news headline|新闻头条|top stories,breaking news|头条新闻,热点|category|类别|LGAS
article|news article|新闻文章|story,report|报道,新闻稿|topic|主题|SGNR
trending_topic|trending topic|热搜话题|what's trending,viral topic|热搜,热门话题|platform|平台|LHA
press_release|press release|新闻通稿|company announcement,official statement|公司公告,官方声明|company|公司|SLG
fact_check|fact check|事实核查|verify a claim,is it true|谣言核实,真假鉴定|claim|说法|GSL
public_sentiment|public sentiment|舆情|public opinion,media sentiment|舆论,网络情绪|topic|主题|NHAK
""",
    ),
    _domain(
        "devops",
        "the web server,production,the payments database,us-east-1,the staging cluster",
        "生产环境,测试集群,支付数据库,网关服务,华东节点",
        """
virtual_machine|virtual machine|虚拟机|server instance,VM|云服务器,实例|region|区域|CDLGUO
server_log|server log|服务器日志|logs,error log|运行日志,错误日志|service|服务|SELN
cpu_usage|CPU usage|CPU使用率|processor load,CPU utilization|处理器负载,CPU占用|host|主机|GHAKF
disk_space|disk space|磁盘空间|storage usage,free disk|硬盘容量,存储空间|host|主机|GAHK
ssl_certificate|SSL certificate|SSL证书|TLS certificate,HTTPS cert|HTTPS证书,安全证书|domain|域名|GCAUL
dns_record|DNS record|DNS记录|domain record,A record|域名解析,解析记录|domain|域名|CUDLG
deployment|deployment|部署|release,rollout|发布,上线|service|服务|CGLXH
database_backup|database backup|数据库备份|snapshot,backup|数据快照,备份|database|数据库|CLGD
incident|incident|故障事件|outage,on-call incident|事故,线上故障|service|服务|CUGLAN
cloud_bill|cloud bill|云账单|cloud cost,AWS bill|云服务费用,云成本|account|账户|GHNEF
""",
    ),
    _domain(
        "education",
        "calculus,French,organic chemistry,World War II,machine learning",
        "微积分,英语四级,有机化学,唐诗,机器学习",
        """
online_course|online course|在线课程|class,lecture series|网课,课程|subject|科目|SRLBG
exam_score|exam score|考试成绩|test result,grade|分数,成绩单|student|学生|GHKNE
homework|homework assignment|家庭作业|assignment,homework|作业,练习题|subject|科目|CLGU
flashcard|flashcard|记忆卡片|study card,vocabulary card|单词卡,抽认卡|deck|卡组|CSLD
dictionary_entry|dictionary definition|词典释义|word meaning,definition|单词意思,词义|word|单词|GS
math_problem|math problem|数学题|equation,math exercise|解方程,算术题|problem|题目|NS
class_schedule|class schedule|课程表|timetable,lesson schedule|课表,上课时间|class|班级|GUEL
scholarship|scholarship|奖学金|grant,financial aid|助学金,资助|country|国家|SLAR
""",
    ),
    _domain(
        "smart home",
        "the living room,the bedroom,the kitchen,the garage,the front door",
        "客厅,卧室,厨房,车库,大门",
        """
light|light|灯光|lamp,lighting|电灯,照明|room|房间|GUOHL
thermostat|thermostat|温控器|heating,air conditioning temperature|空调温度,暖气|room|房间|GUHO
door_lock|door lock|门锁|smart lock,lock|智能锁,锁门|door|门|GOHA
security_camera|security camera|监控摄像头|CCTV,camera feed|摄像头,监控画面|room|房间|GOHE
robot_vacuum|robot vacuum|扫地机器人|vacuum cleaner,cleaning robot|扫地机,吸尘器|room|房间|OGH
washing_machine|washing machine|洗衣机|laundry,wash cycle|洗衣,洗涤程序|program|程序|OGA
energy_usage|home energy usage|家庭用电量|electricity consumption,power usage|电费,耗电量|month|月份|GHKNF
smoke_alarm|smoke alarm|烟雾报警器|fire alarm,smoke detector|火灾报警,烟感|room|房间|GAHL
""",
    ),
    _domain(
        "sports",
        "Real Madrid,the Lakers,Wimbledon,the World Cup,Manchester United",
        "国足,湖人队,中超,世界杯,皇马",
        """
match_score|match score|比赛比分|game result,final score|比分,比赛结果|team|球队|GHA
fixture|match fixture|赛程|schedule of games,upcoming matches|比赛日程,赛程安排|team|球队|LGA
league_table|league standings|积分榜|table,ranking|联赛排名,排行榜|league|联赛|GHK
player_stat|player statistics|球员数据|player stats,goals scored|球员统计,进球数|player|球员|GHKN
sports_ticket|match ticket|比赛门票|game ticket,stadium ticket|球票,体育赛事门票|match|比赛|SBXG
transfer_news|transfer news|转会新闻|signing,transfer rumor|转会消息,签约|team|球队|LSA
betting_odds|betting odds|赔率|odds,bookmaker odds|盘口,投注赔率|match|比赛|GHKA
""",
    ),
    _domain(
        "property and jobs",
        "Shanghai,downtown Seattle,Brooklyn,Shenzhen,London",
        "浦东,朝阳区,南山区,天河区,滨江",
        """
property_listing|property listing|房源|apartment for sale,house listing|二手房,房子|district|区域|SRGKA
rental_listing|rental listing|租房信息|apartment for rent,flat to let|出租房,租房|district|区域|SRAG
house_price|house price|房价|home value,property price|房屋价格,均价|district|区域|GHKFN
mortgage_rate|mortgage rate|房贷利率|home loan rate,interest rate|贷款利率,按揭利率|bank|银行|GHKA
job_posting|job posting|招聘职位|job opening,vacancy|工作机会,岗位|title|职位|SRALC
resume|resume|简历|CV,curriculum vitae|个人简历,履历|candidate|候选人|CUNEG
salary|salary benchmark|薪资水平|pay,compensation|工资,薪酬|job title|职位|GKH
job_interview|job interview|面试|interview slot,hiring interview|面试安排,面试时间|candidate|候选人|BXLG
""",
    ),
    _domain(
        "cars",
        "my Tesla,the Civic,the family car,a Toyota,my motorbike",
        "我的特斯拉,思域,家里的车,丰田,摩托车",
        """
vehicle_maintenance|vehicle maintenance|车辆保养|car service,oil change|汽车维修,换机油|vehicle|车辆|BXGHLA
car_insurance|car insurance|车险|auto insurance,vehicle policy|汽车保险,交强险|vehicle|车辆|GKBUX
fuel_consumption|fuel consumption|油耗|mileage,fuel economy|百公里油耗,耗油量|vehicle|车辆|GHKN
traffic_fine|traffic fine|交通罚单|speeding ticket,traffic violation|违章,罚款|plate number|车牌号|GLA
tire_pressure|tire pressure|胎压|tyre pressure,wheel pressure|轮胎气压,胎压监测|vehicle|车辆|GAH
used_car_price|used car price|二手车价格|car valuation,resale value|二手车估价,车辆残值|model|车型|GKHF
""",
    ),
    _domain(
        "pets",
        "my dog,the cat,a puppy,my parrot,the kitten",
        "我家狗,猫咪,小狗,鹦鹉,小猫",
        """
pet_vaccination|pet vaccination|宠物疫苗|vet shots,rabies vaccine|打疫苗,狂犬疫苗|pet|宠物|GBLA
vet_appointment|vet appointment|宠物医院预约|veterinarian visit,animal clinic|看兽医,宠物看病|clinic|诊所|BXL
pet_food|pet food|宠物粮|dog food,cat food|狗粮,猫粮|brand|品牌|SRK
pet_adoption|pet adoption listing|宠物领养|adopt a pet,rescue animal|领养,流浪动物|species|物种|SRA
dog_walker|dog walker|遛狗服务|pet sitter,dog walking|宠物托管,遛狗|area|区域|SBX
""",
    ),
    _domain(
        "civic",
        "Beijing,my city,Shanghai,Guangdong,New York",
        "北京,本市,上海,广东,深圳",
        """
passport_application|passport application|护照申请|passport renewal,travel document|办护照,护照续签|applicant|申请人|CGXB
social_insurance|social insurance|社保|social security,pension contribution|养老保险,社保缴费|person|个人|GHE
utility_bill|utility bill|水电费账单|electricity bill,water bill|电费,水费|household|住户|GHLA
public_holiday|public holiday|法定节假日|bank holiday,day off|放假安排,节日|country|国家|GL
parking_permit|parking permit|停车许可|resident parking,parking pass|停车证,居民停车|address|地址|CGU
library_loan|library loan|图书借阅|borrowed book,library book|借书,图书馆借阅|card number|借书证号|LUGA
""",
    ),
    _domain(
        "office",
        "the Berlin team,Alice,new hires,the finance department,Q3",
        "研发部,张三,新员工,财务部,第三季度",
        """
payroll|payroll run|工资发放|salary payment,paycheck|发工资,薪资发放|pay period|发薪周期|GCLHE
expense_report|expense report|报销单|expense claim,reimbursement|费用报销,差旅报销|employee|员工|CUGLXEM
purchase_order|purchase order|采购订单|PO,procurement request|采购单,请购单|supplier|供应商|CUGLXE
employee_directory|employee directory entry|员工通讯录|staff profile,colleague info|同事信息,员工档案|name|姓名|SGU
onboarding_checklist|onboarding checklist|入职清单|new hire checklist,onboarding tasks|入职流程,新人任务|employee|员工|CGUL
performance_review|performance review|绩效考核|appraisal,annual review|绩效评估,年终考评|employee|员工|CGULN
office_supply|office supply request|办公用品申领|stationery order,office equipment|文具申领,办公设备|item|物品|CGLX
""",
    ),
    _domain(
        "legal",
        "Acme Corp,the landlord,our supplier,the new partner,the freelancer",
        "甲方公司,房东,供应商,合作伙伴,外包人员",
        """
contract|contract|合同|agreement,legal contract|协议,合约|party|签约方|CSGUNE
e_signature|e-signature request|电子签名|sign a document,DocuSign envelope|电子签章,在线签字|document|文件|MGXL
trademark|trademark|商标|brand registration,registered mark|商标注册,品牌保护|name|名称|SGA
patent|patent|专利|invention patent,patent filing|发明专利,专利申请|keyword|关键词|SGN
court_case|court case|法院案件|lawsuit,litigation|诉讼,官司|case number|案号|SGA
""",
    ),
    _domain(
        "marketing",
        "our website,the spring campaign,Instagram,the landing page,the newsletter",
        "官网,春季活动,小红书,落地页,公众号",
        """
website_traffic|website traffic|网站流量|page views,visitors|访问量,浏览量|site|网站|GHKNAF
ad_campaign|ad campaign|广告投放|advertising campaign,ads|广告活动,推广计划|channel|渠道|CUGLNXK
conversion_rate|conversion rate|转化率|signup rate,funnel conversion|成交率,漏斗转化|funnel|漏斗|GHKN
social_media_post|social media post|社交媒体帖子|tweet,Instagram post|微博,朋友圈动态|platform|平台|CMDLSN
seo_ranking|SEO ranking|搜索排名|search engine position,Google ranking|关键词排名,百度排名|keyword|关键词|GHKA
customer_survey|customer survey|客户问卷|feedback form,satisfaction survey|满意度调查,调查问卷|topic|主题|CMLNE
""",
    ),
    _domain(
        "security",
        "the admin account,alice@example.com,the office VPN,the web gateway,the HR laptop",
        "管理员账号,张三的账号,公司VPN,网关,财务电脑",
        """
password|password|密码|login credentials,passcode|登录密码,口令|account|账号|UGA
user_account|user account|用户账号|login,user profile|账户,用户信息|username|用户名|CUDLSG
vpn_connection|VPN connection|VPN连接|virtual private network,remote access|远程接入,翻墙连接|server|服务器|GOL
firewall_rule|firewall rule|防火墙规则|network rule,port rule|端口策略,访问控制规则|port|端口|CUDL
vulnerability|security vulnerability|安全漏洞|CVE,security flaw|漏洞,安全隐患|package|软件包|SLGNA
access_log|access log|访问日志|login history,audit trail|登录记录,审计日志|user|用户|SLEN
""",
    ),
    _domain(
        "logistics",
        "Shenzhen warehouse,container MSKU123,the Rotterdam port,supplier Foxconn,pallet 42",
        "深圳仓,集装箱,宁波港,富士康,华东仓库",
        """
warehouse_inventory|warehouse inventory|仓库库存|stock level,inventory count|库存数量,存货|warehouse|仓库|GHUALE
freight_quote|freight quote|运费报价|shipping cost,freight rate|运价,物流费用|route|线路|GKS
container_tracking|container tracking|集装箱追踪|shipping container location,cargo tracking|货柜追踪,海运跟踪|container number|柜号|GAH
supplier|supplier|供应商|vendor,manufacturer|厂家,供货商|category|品类|SRGKC
delivery_route|delivery route|配送路线|truck route,last-mile route|派送路线,送货路线|driver|司机|CGN
""",
    ),
    _domain(
        "environment",
        "my rooftop,the farm,Inner Mongolia,the greenhouse,our factory",
        "屋顶,农场,内蒙古,温室大棚,工厂",
        """
solar_output|solar panel output|光伏发电量|solar power generation,PV yield|太阳能发电,光伏出力|site|站点|GHFKA
crop_price|crop price|农产品价格|grain price,wheat price|粮价,玉米价格|crop|作物|GHFK
soil_moisture|soil moisture|土壤湿度|soil water content,field moisture|墒情,土壤含水量|field|地块|GHAF
carbon_footprint|carbon footprint|碳排放|CO2 emissions,greenhouse gas|碳足迹,二氧化碳排放|entity|主体|GHNK
water_quality|water quality|水质|river pollution,drinking water safety|水污染,饮用水安全|station|监测站|GHA
""",
    ),
    _domain(
        "games and photos",
        "Minecraft,Zelda,my holiday album,the wedding photos,Genshin Impact",
        "原神,王者荣耀,旅行相册,婚纱照,毕业照",
        """
game_achievement|game achievement|游戏成就|trophy,unlocked achievement|成就,奖杯|game|游戏|GLK
game_server_status|game server status|游戏服务器状态|server outage,is the game down|开服状态,游戏维护|game|游戏|GAH
game_friend|game friend|游戏好友|gaming buddy,friend list|好友,开黑队友|player|玩家|LSCD
photo_album|photo album|相册|picture gallery,photo collection|照片集,图库|album|相册名|CUDLSE
photo_edit|photo edit|照片编辑|picture filter,image retouch|修图,美颜|photo|照片|CGX
screenshot|screenshot|截图|screen capture,screen grab|截屏,屏幕快照|window|窗口|CLDS
""",
    ),
    _domain(
        "home services",
        "my apartment,the kitchen sink,the new flat,my parents' house,the office",
        "我家,厨房水槽,新房,爸妈家,办公室",
        """
plumber_visit|plumber visit|水管维修上门|pipe repair,leak fix|修水管,管道疏通|address|地址|BXGL
house_cleaning|house cleaning|家政保洁|cleaning service,housekeeping|保洁,打扫卫生|address|地址|BXRKG
moving_service|moving service|搬家服务|removal company,movers|搬家公司,搬运|route|线路|BXKG
internet_plan|internet plan|宽带套餐|broadband plan,Wi-Fi subscription|宽带,网络套餐|provider|运营商|GKUX
mobile_data|mobile data usage|手机流量|data plan,cellular data|流量套餐,上网流量|phone number|手机号|GHA
package_locker|package locker|快递柜|parcel locker,pickup code|快递取件,取件码|locker|柜号|GL
home_repair|home repair request|家电维修|appliance repair,fix the fridge|报修,维修师傅|appliance|电器|CBXG
""",
    ),
)


@dataclass(frozen=True, slots=True)
class ActionWording:
    """How one action is named (`name` takes {slug}; `zh_name` follows the object's Chinese
    term), described (`en`, `zh`: {obj}, its first synonym {alt} and its argument {arg}) and
    asked for (`ask_en`, `ask_zh`: {obj}, {entity} and {entity2}); `extra_arguments` are the
    action's arguments besides the object's."""

    name: str
    zh_name: str
    en: str
    zh: str
    ask_en: tuple[str, ...]
    ask_zh: tuple[str, ...]
    extra_arguments: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Wording:
    camel_case: bool
    actions: dict[str, ActionWording]


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    tool: str
    language: Language
    kind: QuestionKind


class CatalogTool(Tool):
    """A generated tool: a name, a description, a JSON schema; it answers with its name."""

    def __init__(self, name: str, description: str, parameters: dict[str, Any]) -> None:
        self.name = name
        self.description = description
        self._parameters = parameters

    @property
    def parameters(self) -> dict[str, Any]:
        return self._parameters

    def call(self, input: str) -> str:
        return f"{self.name} got {input}"


@dataclass(frozen=True, slots=True)
class _Entry:
    tool: CatalogTool
    domain: Domain
    obj: Obj
    action: ActionWording
    language: Language


@dataclass
class Catalog:
    entries: list[_Entry]
    wording: Wording
    seed: int

    @property
    def tools(self) -> list[CatalogTool]:
        return [entry.tool for entry in self.entries]

    def questions(self, count: int, kind: QuestionKind, *, seed: int) -> list[Question]:
        """`count` questions about distinct tools, drawn with `seed`, of one kind:

        - "described": in the language of the tool's description, naming the object by a
          term the description uses (its primary term or first synonym);
        - "unseen synonym": the same, but by a synonym the description does not use;
        - "cross-language": in the other language, naming the object by any of its terms.
        """
        chooser = random.Random(seed)
        picked = chooser.sample(self.entries, min(count, len(self.entries)))
        questions = []
        for entry in picked:
            obj, language = entry.obj, entry.language
            if kind == "cross-language":
                language = "zh" if language == "en" else "en"
            terms = (obj.en, *obj.en_alts) if language == "en" else (obj.zh, *obj.zh_alts)
            if kind == "described":
                terms = terms[:2]
            elif kind == "unseen synonym":
                terms = terms[2:]
            text = _ask(entry, language, chooser.choice(terms), chooser)
            questions.append(Question(text, entry.tool.name, language, kind))
        return questions


def _ask(entry: _Entry, language: Language, term: str, chooser: random.Random) -> str:
    if language == "en":
        template = chooser.choice(entry.action.ask_en)
        entities = chooser.sample(entry.domain.entities_en, 2)
    else:
        template = chooser.choice(entry.action.ask_zh)
        entities = chooser.sample(entry.domain.entities_zh, 2)
    return template.format(obj=term, entity=entities[0], entity2=entities[1])


def build(wording: Wording, *, seed: int, chinese_share: float = 0.5) -> Catalog:
    """Every (object, action) tool of the vocabulary, worded by `wording`; each is described
    in Chinese with probability `chinese_share`, and a fifth of those get a Chinese name."""
    chooser = random.Random(seed)
    entries = []
    for domain in DOMAINS:
        for obj in domain.objects:
            for letter in obj.actions:
                action = wording.actions[letter]
                language: Language = "zh" if chooser.random() < chinese_share else "en"
                name = _name(action.name.format(slug=obj.slug), wording.camel_case)
                if language == "zh" and chooser.random() < 0.2:
                    name = f"{obj.zh}{action.zh_name}"
                if language == "en":
                    description = action.en.format(obj=obj.en, alt=obj.en_alts[0], arg=obj.arg)
                else:
                    description = action.zh.format(obj=obj.zh, alt=obj.zh_alts[0], arg=obj.arg_zh)
                tool = CatalogTool(name, description, _parameters(obj, action))
                entries.append(_Entry(tool, domain, obj, action, language))
    return Catalog(entries, wording, seed)


def _name(snake: str, camel_case: bool) -> str:
    if not camel_case:
        return snake
    first, *rest = snake.split("_")
    return first + "".join(part.capitalize() for part in rest)


def _parameters(obj: Obj, action: ActionWording) -> dict[str, Any]:
    argument = obj.arg.replace(" ", "_").replace("-", "_")
    properties: dict[str, Any] = {argument: {"type": "string", "description": obj.arg}}
    for extra in action.extra_arguments:
        properties[extra] = {"type": "string"}
    return {"type": "object", "properties": properties, "required": [argument]}


def wording(camel_case: bool, table: dict[str, tuple[Any, ...]]) -> Wording:
    """A Wording from one row of `ActionWording` fields per action letter."""
    return Wording(camel_case, {letter: ActionWording(*row) for letter, row in table.items()})


# The tests' wording: other templates than the benchmark's, and camelCase names.
TEST_WORDING = wording(
    True,
    {
        "G": (
            "fetch_{slug}",
            "获取",
            "Fetch {obj} ({alt}) data by {arg}.",
            "获取某个{arg}的{obj}（{alt}）数据。",
            ("what's the {obj} of {entity} right now", "look up {entity} {obj}"),
            ("{entity}现在{obj}怎么样", "看看{entity}的{obj}"),
        ),
        "L": (
            "list_all_{slug}",
            "一览",
            "Return every {obj} ({alt}) entry in pages of 50.",
            "分页返回全部{obj}（{alt}）条目。",
            ("give me every {obj} we have for {entity}", "all {obj} entries please"),
            ("{entity}的{obj}全部列出来", "所有{obj}条目"),
        ),
        "C": (
            "new_{slug}",
            "新建",
            "Make a {obj} ({alt}) record from the fields given.",
            "根据给定字段新建{obj}（{alt}）记录。",
            ("make a {obj} for {entity}", "I'd like a new {obj} for {entity}"),
            ("新建{entity}的{obj}", "给{entity}新建一个{obj}"),
        ),
        "U": (
            "edit_{slug}",
            "编辑",
            "Edit fields of a {obj} ({alt}).",
            "编辑{obj}（{alt}）的字段。",
            ("edit the {obj} for {entity}", "fix a field in my {obj}"),
            ("编辑{entity}的{obj}", "改一下{obj}的内容"),
        ),
        "D": (
            "remove_{slug}",
            "移除",
            "Remove a {obj} ({alt}); this cannot be undone.",
            "移除{obj}（{alt}），不可恢复。",
            ("remove the {obj} of {entity}", "get rid of that {obj}"),
            ("移除{entity}的{obj}", "{obj}不要了，移除掉"),
        ),
        "S": (
            "find_{slug}",
            "查找",
            "Full-text search across {obj} ({alt}) entries.",
            "全文检索{obj}（{alt}）条目。",
            ("find any {obj} mentioning {entity}", "full-text search {obj} for {entity}"),
            ("检索提到{entity}的{obj}", "查找{entity}相关{obj}"),
        ),
        "H": (
            "{slug}_timeline",
            "时间线",
            "Daily {obj} ({alt}) timeline between two dates.",
            "两个日期之间每天的{obj}（{alt}）时间线。",
            (
                "daily {obj} timeline for {entity} since January",
                "{entity} {obj} day by day last quarter",
            ),
            ("{entity}今年以来每天的{obj}时间线", "{obj}按天的时间线，{entity}"),
        ),
        "E": (
            "download_{slug}",
            "下载",
            "Download {obj} ({alt}) data as a file.",
            "下载{obj}（{alt}）数据文件。",
            ("download {entity} {obj} data as a file", "I want a file of my {obj}"),
            ("下载{entity}的{obj}数据", "{obj}数据下载成文件"),
        ),
        "A": (
            "watch_{slug}",
            "监控",
            "Watch the {obj} ({alt}) and push a message on change.",
            "监控{obj}（{alt}），有变化时推送消息。",
            (
                "watch {entity} {obj} and ping me",
                "push me a message if the {obj} moves for {entity}",
            ),
            ("监控{entity}的{obj}，有变化推送给我", "帮我盯着{entity}的{obj}"),
        ),
        "K": (
            "{slug}_side_by_side",
            "比较",
            "Put the {obj} ({alt}) of several {arg}s side by side.",
            "并排比较几个{arg}的{obj}（{alt}）。",
            (
                "{entity} vs {entity2}: {obj} side by side",
                "put {entity} and {entity2} {obj} side by side",
            ),
            ("{entity}对{entity2}，{obj}并排比较", "并排看{entity}和{entity2}的{obj}"),
        ),
        "F": (
            "predict_{slug}",
            "展望",
            "Predict the {obj} ({alt}) a week ahead.",
            "展望未来一周的{obj}（{alt}）。",
            (
                "predict next week's {obj} for {entity}",
                "what {obj} should {entity} expect next week",
            ),
            ("展望{entity}下周的{obj}", "{entity}接下来一周{obj}展望"),
        ),
        "N": (
            "{slug}_insights",
            "洞察",
            "Insights on the {obj} ({alt}): trends and outliers.",
            "{obj}（{alt}）洞察：趋势和异常值。",
            (
                "insights on {entity} {obj}: trends and outliers",
                "any outliers in the {obj} of {entity}",
            ),
            ("{entity}的{obj}有什么趋势和异常", "{obj}洞察，{entity}"),
        ),
        "B": (
            "reserve_{slug}",
            "预约",
            "Reserve a {obj} ({alt}) for a date.",
            "按日期预约{obj}（{alt}）。",
            ("reserve {obj} in {entity} for Saturday", "can you reserve a {obj} near {entity}"),
            ("周六在{entity}预约{obj}", "预约一个{entity}附近的{obj}"),
        ),
        "X": (
            "revoke_{slug}",
            "撤销",
            "Revoke an existing {obj} ({alt}) reservation.",
            "撤销已有的{obj}（{alt}）预约。",
            ("revoke my {obj} for {entity}", "call off the {obj} in {entity}"),
            ("撤销{entity}的{obj}", "{entity}那个{obj}撤销掉"),
        ),
        "R": (
            "suggest_{slug}",
            "建议",
            "Suggest {obj} ({alt}) options you may like.",
            "建议你可能喜欢的{obj}（{alt}）。",
            ("suggest a {obj} I may like around {entity}", "any {obj} you'd suggest like {entity}"),
            ("建议几个{entity}附近的{obj}", "有什么{obj}建议，类似{entity}"),
        ),
        "M": (
            "deliver_{slug}",
            "投递",
            "Deliver a {obj} ({alt}) to someone.",
            "把{obj}（{alt}）投递给某人。",
            ("deliver this {obj} to {entity}", "{obj} to {entity}, deliver now"),
            ("把{obj}投递给{entity}", "{obj}马上投递给{entity}"),
        ),
        "P": (
            "stream_{slug}",
            "串流",
            "Stream a {obj} ({alt}) to a speaker or screen.",
            "串流{obj}（{alt}）到音箱或屏幕。",
            ("stream {entity} {obj} in the living room", "stream some {obj} of {entity}"),
            ("串流{entity}的{obj}", "在客厅串流{entity}的{obj}"),
        ),
        "O": (
            "switch_{slug}",
            "切换",
            "Switch a {obj} ({alt}) between on and off.",
            "切换{obj}（{alt}）的开关状态。",
            ("switch the {obj} in {entity} on", "switch {entity} {obj} off"),
            ("切换{entity}{obj}的开关", "{entity}的{obj}切换成关"),
        ),
    },
)
TEST_SEED = 77
